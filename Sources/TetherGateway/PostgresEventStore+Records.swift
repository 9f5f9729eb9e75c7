import Foundation
import PostgresNIO
import TetherCore
import TetherStreaming

/// What the shared log keeps besides events, as `EventLog+*` keeps it in SQLite: answered
/// approvals (so every replica answers an approval once), approval pushes, the gateway's id,
/// pairing codes and sessions' models.
extension PostgresEventStore {
    @discardableResult
    public func recordDecision(profile: String, approval: String, decision: String, line: String) async throws -> EventLog.RecordedDecision {
        try await query("""
            INSERT INTO approval_decision (profile, id, decision, line) VALUES (\(profile), \(approval), \(decision), \(line))
            ON CONFLICT DO NOTHING
            """, logger: logger)
        guard let recorded = try await recordedDecision(profile: profile, approval: approval) else {
            throw OpenError(location: "\(location)", reason: "the answer to approval \(approval) was recorded but cannot be read back")
        }
        return recorded
    }

    public func claimDecision(profile: String, approval: String, decision: String, line: String) async throws -> EventLog.RecordedDecision? {
        // One statement: of two replicas claiming at once, one inserts and the other reads it.
        let claimed = try await first(String.self, """
            INSERT INTO approval_decision (profile, id, decision, line) VALUES (\(profile), \(approval), \(decision), \(line))
            ON CONFLICT DO NOTHING RETURNING id
            """) != nil
        if claimed { return nil }
        guard let recorded = try await recordedDecision(profile: profile, approval: approval) else {
            // Withdrawn between the two statements: claim again.
            return try await claimDecision(profile: profile, approval: approval, decision: decision, line: line)
        }
        return recorded
    }

    public func settleDecision(profile: String, approval: String, claim: String, line: String) async throws {
        try await query("""
            UPDATE approval_decision SET line = \(line) WHERE profile = \(profile) AND id = \(approval) AND line = \(claim)
            """, logger: logger)
    }

    public func withdrawDecision(profile: String, approval: String, line: String) async throws {
        try await query("DELETE FROM approval_decision WHERE profile = \(profile) AND id = \(approval) AND line = \(line)",
                               logger: logger)
    }

    public func decision(profile: String, approval: String) async throws -> EventLog.RecordedDecision? {
        if let recorded = try await recordedDecision(profile: profile, approval: approval) { return recorded }
        let key = EventDedupKey.join(profile: profile, type: "approval.resolved", [approval])
        guard let line = try await first(String.self, "SELECT line FROM event WHERE dedup_key = \(key)") else { return nil }
        let decision = (try? JSONParser.parse(line))?["data"]?["decision"]?.string ?? "unknown"
        return EventLog.RecordedDecision(decision: decision, line: line)
    }

    private func recordedDecision(profile: String, approval: String) async throws -> EventLog.RecordedDecision? {
        let rows = try await query("""
            SELECT decision, line FROM approval_decision WHERE profile = \(profile) AND id = \(approval)
            """, logger: logger)
        for try await (decision, line) in rows.decode((String, String).self) {
            return EventLog.RecordedDecision(decision: decision, line: line)
        }
        return nil
    }

    public func wasRequested(profile: String, approval: String) async throws -> Bool {
        let key = EventDedupKey.join(profile: profile, type: "approval.requested", [approval])
        return try await first(Bool.self, "SELECT EXISTS (SELECT 1 FROM event WHERE dedup_key = \(key))") ?? false
    }

    public func claimPush(profile: String, approval: String) async throws -> Bool {
        try await first(String.self, """
            INSERT INTO approval_push (profile, id) VALUES (\(profile), \(approval)) ON CONFLICT DO NOTHING RETURNING id
            """) != nil
    }

    public func markPushDelivered(profile: String, approval: String) async throws {
        try await query("UPDATE approval_push SET delivered = TRUE WHERE profile = \(profile) AND id = \(approval)", logger: logger)
    }

    public func undeliveredPushes() async throws -> [(profile: String, approval: String, line: String)] {
        let rows = try await query("SELECT profile, id FROM approval_push WHERE NOT delivered", logger: logger)
        var pending: [(String, String)] = []
        for try await row in rows.decode((String, String).self) { pending.append(row) }
        var found: [(profile: String, approval: String, line: String)] = []
        for (profile, approval) in pending {
            let key = EventDedupKey.join(profile: profile, type: "approval.requested", [approval])
            if let line = try await first(String.self, "SELECT line FROM event WHERE dedup_key = \(key)") {
                found.append((profile, approval, line))
            }
        }
        return found
    }

    public func gatewayID() async throws -> String {
        let candidate = Int64.random(in: 1...Int64.max)
        try await query("INSERT INTO gateway_meta (key, value) VALUES ('gateway_id', \(candidate)) ON CONFLICT DO NOTHING",
                               logger: logger)
        let value = try await first(Int64.self, "SELECT value FROM gateway_meta WHERE key = 'gateway_id'") ?? candidate
        return EventLog.gatewayIDText(value)
    }

    public func lastCursor(profile: String) async throws -> String? {
        try await first(String.self, """
            SELECT line::json->>'cursor' FROM event
            WHERE profile = \(profile) AND line::json->>'cursor' IS NOT NULL ORDER BY seq DESC LIMIT 1
            """)
    }

    public func mintPairingCode(now: Date, lifetime: TimeInterval) async throws -> PairingCode {
        let code = PairingCode(code: PairingCode.random(), expires: now.timeIntervalSince1970 + lifetime)
        try await query("DELETE FROM pairing_code WHERE expires <= \(now.timeIntervalSince1970)", logger: logger)
        try await query("INSERT INTO pairing_code (code, expires) VALUES (\(code.code), \(code.expires))", logger: logger)
        return code
    }

    public func redeemPairingCode(_ code: String, now: Date) async throws -> Bool {
        guard PairingCode.isWellFormed(code) else { return false }
        let instant = now.timeIntervalSince1970
        // One statement: two replicas redeeming the same code at once cannot both delete it.
        let redeemed = try await first(String.self, """
            DELETE FROM pairing_code WHERE code = \(code) AND expires > \(instant) RETURNING code
            """) != nil
        try await query("DELETE FROM pairing_code WHERE code = \(code) OR expires <= \(instant)", logger: logger)
        return redeemed
    }

    public func setModel(_ model: String, profile: String, session: String) async throws {
        try await query("""
            INSERT INTO session_model (profile, session, model) VALUES (\(profile), \(session), \(model))
            ON CONFLICT (profile, session) DO UPDATE SET model = EXCLUDED.model
            """, logger: logger)
    }

    public func model(profile: String, session: String) async throws -> String? {
        try await first(String.self, "SELECT model FROM session_model WHERE profile = \(profile) AND session = \(session)")
    }
}
