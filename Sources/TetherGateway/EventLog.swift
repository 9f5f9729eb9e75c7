import Foundation
import GRDB
import Logging
import TetherCore

/// The durable event log: SQLite (WAL) through GRDB. Each appended event gets a `seq` from an
/// `INTEGER PRIMARY KEY AUTOINCREMENT` column, so a seq is never reused, even after retention
/// deleted every row or the gateway restarted. The stored form is the schema-v1 JSON line.
public final class EventLog: Sendable {
    let pool: DatabasePool
    let logger: Logger
    /// How many dedup keys of trimmed events are kept (`trim(olderThan:)`).
    let retiredDedupLimit: Int

    public struct OpenError: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String {
            "cannot open the gateway's event log at \(path): \(reason); pass --db with a writable path, or delete the file to start clean"
        }
    }

    /// Opens (creating if needed) the log at `path`; its directory is created too.
    /// `retiredDedupLimit`: how many dedup keys of trimmed events are kept (the newest).
    public init(path: String, logger: Logger, retiredDedupLimit: Int = EventLog.standardRetiredDedupLimit) throws {
        precondition(retiredDedupLimit > 0, "keep at least one retired dedup key")
        self.logger = logger
        self.retiredDedupLimit = retiredDedupLimit
        try PrivateFile.prepare(path, logger: logger)
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // WAL makes a commit durable across a crash of this process without an fsync each time.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try Self.migrator.migrate(pool)
        } catch {
            throw OpenError(path: path, reason: "\(error)")
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE event (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    ts REAL NOT NULL,
                    type TEXT NOT NULL,
                    profile TEXT,
                    session TEXT,
                    dedup_key TEXT,
                    line TEXT NOT NULL
                );
                CREATE UNIQUE INDEX event_dedup ON event(dedup_key) WHERE dedup_key IS NOT NULL;
                CREATE INDEX event_ts ON event(ts);
                CREATE TABLE approval_decision (
                    profile TEXT NOT NULL,
                    id TEXT NOT NULL,
                    decision TEXT NOT NULL,
                    line TEXT NOT NULL,
                    PRIMARY KEY (profile, id)
                );
                CREATE TABLE approval_push (
                    profile TEXT NOT NULL,
                    id TEXT NOT NULL,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (profile, id)
                );
                CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                """)
        }
        migrator.registerMigration("v2 retired dedup keys") { db in
            // The duplicate rule outlives retention: a resubscription reads a session's recent
            // turns back from history, and those may be older than what retention keeps.
            try db.execute(sql: "CREATE TABLE retired_dedup (key TEXT PRIMARY KEY, seq INTEGER NOT NULL)")
            try db.execute(sql: "CREATE INDEX retired_dedup_seq ON retired_dedup(seq)")
        }
        registerPairingMigration(&migrator)
        registerSessionModelMigration(&migrator)
        registerLoginMigration(&migrator)
        return migrator
    }

    /// Appends `event` (already stamped with its profile and backend). Returns nil when the
    /// duplicate rule drops it because an equal event is already logged.
    public func append(_ event: Event) throws -> LoggedEvent? {
        try append([event])[0]
    }

    /// Appends `events` in order, in one transaction (a stream's batch: one commit, not one per
    /// event). Each answer is the logged event, or nil where the duplicate rule dropped it —
    /// an equal event logged before, or earlier in the same batch.
    public func append(_ events: [Event]) throws -> [LoggedEvent?] {
        let rows = EventRow.prepare(events)
        return try pool.write { db -> [LoggedEvent?] in
            var logged = [LoggedEvent?](repeating: nil, count: rows.count)
            let kept = try Self.withoutDuplicates(rows, db)
            // The kept rows go in as multi-row INSERTs: the single writer holds the transaction,
            // so a statement's rows take consecutive seqs in the order of its VALUES.
            var next = kept.startIndex
            while next < kept.endIndex {
                let chunk = kept[next..<(next + InsertChunk.rows(remaining: kept.endIndex - next))]
                var insert = RawInsert(try db.cachedStatement(sql: InsertChunk.sql[chunk.count]!))
                for index in chunk { rows[index].bind(to: &insert) }
                try insert.run(db)
                let first = db.lastInsertedRowID - Int64(chunk.count) + 1
                for (offset, index) in chunk.enumerated() {
                    logged[index] = rows[index].logged(seq: first + Int64(offset))
                }
                next = chunk.endIndex
            }
            return logged
        }
    }

    /// The indexes of the rows the duplicate rule keeps: no key, or a key neither logged (nor
    /// retired) before nor taken by an earlier row of the same batch.
    private static func withoutDuplicates(_ rows: [EventRow], _ db: Database) throws -> [Int] {
        // Looked up rather than INSERT OR IGNORE, which would spend a seq on a duplicate.
        let seen = try db.cachedStatement(sql: """
            SELECT EXISTS(SELECT 1 FROM event WHERE dedup_key = ?1) OR EXISTS(SELECT 1 FROM retired_dedup WHERE key = ?1)
            """)
        var keysInBatch = Set<String>()
        var kept: [Int] = []
        kept.reserveCapacity(rows.count)
        for (index, row) in rows.enumerated() {
            if let key = row.key {
                guard keysInBatch.insert(key).inserted, try Bool.fetchOne(seen, arguments: [key]) != true else { continue }
            }
            kept.append(index)
        }
        return kept
    }


    /// Up to `limit` events after `seq`, in seq order, matching `filter`.
    public func events(after seq: Int64, matching filter: EventQuery = EventQuery(), limit: Int = 500) throws -> [LoggedEvent] {
        try pool.read { db in try Self.events(db, after: seq, matching: filter, limit: limit) }
    }

    /// A page of a replay, with where the log's kept range was when it was read: all three in
    /// one read, so a trim that runs between pages is seen by the next page, never skipped.
    public struct Page: Sendable {
        public var events: [LoggedEvent]
        /// `trimmedThrough()` and `lastSeq()` as of the same read.
        public var trimmedThrough: Int64
        public var lastSeq: Int64
    }

    public func page(after seq: Int64, matching filter: EventQuery = EventQuery(), limit: Int = 500) throws -> Page {
        try pool.read { db in
            Page(events: try Self.events(db, after: seq, matching: filter, limit: limit),
                 trimmedThrough: try Self.trimmedThrough(db), lastSeq: try Self.lastSeq(db))
        }
    }

    private static func events(_ db: Database, after seq: Int64, matching filter: EventQuery, limit: Int) throws -> [LoggedEvent] {
        var after = seq
        var found: [LoggedEvent] = []
        found.reserveCapacity(limit)
        let statement = try db.cachedStatement(sql: """
            SELECT seq, type, profile, session, line FROM event WHERE seq > ? ORDER BY seq LIMIT ?
            """)
        // Filtered in Swift (prefix rules on type); read in pages until `limit` match or the end.
        // Without a filter every row matches: a page reads only the rows it returns.
        while found.count < limit {
            let rowsWanted = filter == EventQuery() ? limit - found.count : 1000
            // Read from the statement as it steps (columns by position), not copied into rows first.
            let rows = try Row.fetchCursor(statement, arguments: [after, rowsWanted])
            var read = 0
            while let row = try rows.next() {
                read += 1
                let event = LoggedEvent(seq: row[0], type: row[1], profile: row[2], session: row[3], line: row[4])
                after = event.seq
                if filter.matches(event) { found.append(event) }
                if found.count == limit { break }
            }
            if read < rowsWanted { break }  // the end of the log
        }
        return found
    }

    /// The last seq ever handed out (0 for a new log), whether or not that event is still kept.
    public func lastSeq() throws -> Int64 {
        try pool.read(Self.lastSeq)
    }

    /// The highest seq retention has deleted (0 when it never deleted anything): a cursor below it
    /// has lost events.
    public func trimmedThrough() throws -> Int64 {
        try pool.read(Self.trimmedThrough)
    }

    private static func lastSeq(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'event'") ?? 0
    }

    private static func trimmedThrough(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'trimmed_through'") ?? 0
    }
}

extension EventLog {
    /// The receive time of the profile's last logged event, nil when it has none.
    public func lastTimestamp(profile: String) throws -> Double? {
        try pool.read { db in
            try Double.fetchOne(db, sql: "SELECT ts FROM event WHERE profile = ? ORDER BY seq DESC LIMIT 1", arguments: [profile])
        }
    }
}
