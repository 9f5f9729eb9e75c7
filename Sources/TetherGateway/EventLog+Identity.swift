import GRDB
import TetherCore

extension EventLog {
    /// This gateway's id (`GatewayIdentity`): made once, at random, and kept with the log, so a
    /// gateway restarted on the same log is the same gateway; a new log is a new one.
    public func gatewayID() throws -> String {
        try pool.write { db in
            if let value = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'gateway_id'") {
                return Self.gatewayIDText(value)
            }
            let value = Int64.random(in: 1...Int64.max)
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('gateway_id', ?)", arguments: [value])
            return Self.gatewayIDText(value)
        }
    }

    static func gatewayIDText(_ value: Int64) -> String { "gw-" + String(value, radix: 16) }

    /// The cursor of `profile`'s last logged event that has one: where a fanned-in gateway's
    /// stream resumes (its seq).
    public func lastCursor(profile: String) throws -> String? {
        try pool.read { db in
            try String.fetchOne(db, sql: """
                SELECT json_extract(line, '$.cursor') FROM event
                WHERE profile = ? AND json_extract(line, '$.cursor') IS NOT NULL ORDER BY seq DESC LIMIT 1
                """, arguments: [profile])
        }
    }
}
