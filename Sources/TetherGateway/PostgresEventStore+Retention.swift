import PostgresNIO

/// Retention in the shared log: as `EventLog.trim`, in one transaction that holds the counter
/// row, so a trim and the appends of every replica are ordered, and a reader's snapshot sees
/// both the deletion and the new `trimmed_through`, or neither.
extension PostgresEventStore {
    @discardableResult
    public func trim(olderThan cutoff: Double) async throws -> Int {
        let logger = logger
        let limit = retiredDedupLimit
        return try await client.withTransaction(logger: logger) { connection -> Int in
            try await connection.query("SELECT last_seq FROM log_counter WHERE id = 1 FOR UPDATE", logger: logger)
            var highest: Int64?
            let rows = try await connection.query("SELECT MAX(seq) FROM event WHERE ts < \(cutoff)", logger: logger)
            for try await value in rows.decode(Int64?.self) { highest = value }
            guard let highest else { return 0 }
            try await connection.query("""
                INSERT INTO retired_dedup (key, seq)
                SELECT dedup_key, seq FROM event WHERE seq <= \(highest) AND dedup_key IS NOT NULL
                ON CONFLICT DO NOTHING
                """, logger: logger)
            try await connection.query("""
                DELETE FROM retired_dedup WHERE seq < (SELECT seq FROM retired_dedup ORDER BY seq DESC LIMIT 1 OFFSET \(limit - 1))
                """, logger: logger)
            var deleted = 0
            let gone = try await connection.query("DELETE FROM event WHERE seq <= \(highest) RETURNING seq", logger: logger)
            for try await _ in gone.decode(Int64.self) { deleted += 1 }
            try await connection.query("""
                UPDATE log_counter SET trimmed_through = GREATEST(trimmed_through, \(highest)) WHERE id = 1
                """, logger: logger)
            return deleted
        }
    }
}
