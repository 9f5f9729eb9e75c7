import PostgresNIO

/// Login cookies in the shared log (`KeptLogins`): any replica honours a cookie another made.
extension PostgresEventStore {
    public func saveLogin(_ cookie: String, at now: Double, keeping: Int) async throws {
        try await query("""
            INSERT INTO login (cookie, started, last_used) VALUES (\(cookie), \(now), \(now))
            ON CONFLICT (cookie) DO UPDATE SET started = EXCLUDED.started, last_used = EXCLUDED.last_used
            """, logger: logger)
        try await query("""
            DELETE FROM login WHERE cookie IN (SELECT cookie FROM login ORDER BY last_used DESC OFFSET \(keeping))
            """, logger: logger)
    }

    public func login(_ cookie: String) async throws -> LoginRecord? {
        let rows = try await query("SELECT started, last_used FROM login WHERE cookie = \(cookie)", logger: logger)
        for try await (started, lastUsed) in rows.decode((Double, Double).self) {
            return LoginRecord(started: started, lastUsed: lastUsed)
        }
        return nil
    }

    public func touchLogin(_ cookie: String, at now: Double) async throws {
        try await query("UPDATE login SET last_used = GREATEST(last_used, \(now)) WHERE cookie = \(cookie)", logger: logger)
    }

    public func deleteLogin(_ cookie: String) async throws {
        try await query("DELETE FROM login WHERE cookie = \(cookie)", logger: logger)
    }

    public func deleteLogins(usedBefore: Double, startedBefore: Double) async throws {
        try await query("DELETE FROM login WHERE last_used <= \(usedBefore) OR started <= \(startedBefore)", logger: logger)
    }
}
