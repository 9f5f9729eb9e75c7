import GRDB

extension EventLog {
    /// Deletes events older than `cutoff` (epoch milliseconds) and remembers the highest seq
    /// deleted, so a cursor from before it is told `cursor_expired`. Returns how many went.
    @discardableResult
    public func trim(olderThan cutoff: Double) throws -> Int {
        try pool.write { db in
            guard let highest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM event WHERE ts < ?", arguments: [cutoff])
            else { return 0 }
            // Everything at or below the highest old seq goes: the log stays a suffix of the seq range.
            try db.execute(sql: "DELETE FROM event WHERE seq <= ?", arguments: [highest])
            let deleted = db.changesCount
            try db.execute(sql: """
                INSERT INTO meta (key, value) VALUES ('trimmed_through', ?)
                ON CONFLICT(key) DO UPDATE SET value = MAX(value, excluded.value)
                """, arguments: [highest])
            return deleted
        }
    }
}
