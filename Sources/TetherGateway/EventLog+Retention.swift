import GRDB

extension EventLog {
    /// Dedup keys kept after their events were trimmed (the newest, by seq): what a
    /// resubscription's read of recent turns can bring back. Each is a short row.
    public static let standardRetiredDedupLimit = 100_000

    /// Deletes events older than `cutoff` (epoch milliseconds) and remembers the highest seq
    /// deleted, so a cursor from before it is told `cursor_expired`, and the dedup keys of what
    /// it deleted, so history read back later is not logged again. Returns how many went.
    @discardableResult
    public func trim(olderThan cutoff: Double) throws -> Int {
        try pool.write { db in
            guard let highest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM event WHERE ts < ?", arguments: [cutoff])
            else { return 0 }
            try db.execute(sql: """
                INSERT OR IGNORE INTO retired_dedup (key, seq)
                SELECT dedup_key, seq FROM event WHERE seq <= ? AND dedup_key IS NOT NULL
                """, arguments: [highest])
            try db.execute(sql: """
                DELETE FROM retired_dedup WHERE seq < (SELECT seq FROM retired_dedup ORDER BY seq DESC LIMIT 1 OFFSET ?)
                """, arguments: [retiredDedupLimit - 1])
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
