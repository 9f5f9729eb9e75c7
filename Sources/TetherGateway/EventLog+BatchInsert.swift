import CSQLite
import GRDB

extension EventLog {
    /// A batch's kept rows go in as multi-row INSERTs, a chunk at a time, each chunk's size a
    /// power of two, so a few cached statements serve every batch size.
    enum InsertChunk {
        static let maxRows = 128

        /// The largest chunk that fits in `remaining` rows.
        static func rows(remaining: Int) -> Int {
            var size = maxRows
            while size > remaining { size /= 2 }
            return size
        }

        /// The statement for each chunk size.
        static let sql: [Int: String] = Dictionary(uniqueKeysWithValues: sequence(first: maxRows) { $0 > 1 ? $0 / 2 : nil }.map { rows in
            (rows, "INSERT INTO event (ts, type, profile, session, dedup_key, line) VALUES "
                + Array(repeating: "(?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", "))
        })
    }

    /// Runs one of the log's INSERTs on the SQLite handle of a GRDB cached statement, with its
    /// values bound one by one: GRDB's `StatementArguments` would build and convert an array of
    /// every value first, which cost the ingest more than SQLite's own work (bench/PROFILE.md).
    ///
    /// What keeps it sound: it is used only inside `pool.write`, on the writer connection that owns
    /// the statement, and GRDB keeps the cached statement alive for that connection's life; a run
    /// resets the statement first and must bind every parameter before `run` steps it; SQLite
    /// copies each string while binding it; no GRDB transaction observer is registered on the log,
    /// so stepping outside GRDB's `execute` skips no one.
    struct RawInsert {
        private let statement: Statement
        private var bound: Int32 = 0
        private var failure: Int32 = SQLITE_OK

        init(_ statement: Statement) {
            self.statement = statement
            sqlite3_reset(statement.sqliteStatement)  // its result is the previous run's, already seen
        }

        mutating func bind(_ value: Double) {
            bound += 1
            note(sqlite3_bind_double(statement.sqliteStatement, bound, value))
        }

        mutating func bind(_ value: String?) {
            bound += 1
            guard let value else {
                note(sqlite3_bind_null(statement.sqliteStatement, bound))
                return
            }
            guard let length = Int32(exactly: value.utf8.count) else {
                note(SQLITE_TOOBIG)
                return
            }
            note(tether_sqlite_bind_text(statement.sqliteStatement, bound, value, length))
        }

        /// Steps the statement to its end; throws SQLite's error (a bind that failed, a constraint).
        func run(_ db: Database) throws {
            guard failure == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: failure), sql: statement.sql) }
            precondition(bound == sqlite3_bind_parameter_count(statement.sqliteStatement), "every parameter of the insert is bound")
            let code = sqlite3_step(statement.sqliteStatement)
            guard code == SQLITE_DONE else {
                let message = db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
                sqlite3_reset(statement.sqliteStatement)
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
            }
            sqlite3_reset(statement.sqliteStatement)
        }

        private mutating func note(_ code: Int32) {
            if code != SQLITE_OK, failure == SQLITE_OK { failure = code }
        }
    }
}

extension EventRow {
    /// Binds the row's six columns, in `InsertChunk.sql`'s order.
    func bind(to insert: inout EventLog.RawInsert) {
        insert.bind(event.ts)
        insert.bind(event.type.rawValue)
        insert.bind(event.profile)
        insert.bind(event.session)
        insert.bind(key)
        insert.bind(line)
    }
}
