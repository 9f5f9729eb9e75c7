import GRDB
import TetherCore
import TetherStreaming

/// Answered approvals, kept in the log's database so "answer once" survives a restart.
extension EventLog {
    public struct RecordedDecision: Sendable, Equatable {
        public let decision: String
        /// The `approval.resolved` line the answer produced.
        public let line: String
    }

    /// Records the first answer to an approval; a later call for the same id keeps the first.
    /// Returns the decision that is recorded after the call.
    @discardableResult
    public func recordDecision(profile: String, approval: String, decision: String, line: String) throws -> RecordedDecision {
        try pool.write { db in
            try db.execute(sql: """
                INSERT OR IGNORE INTO approval_decision (profile, id, decision, line) VALUES (?, ?, ?, ?)
                """, arguments: [profile, approval, decision, line])
            let row = try Row.fetchOne(db, sql: "SELECT decision, line FROM approval_decision WHERE profile = ? AND id = ?",
                                       arguments: [profile, approval])!
            return RecordedDecision(decision: row["decision"], line: row["line"])
        }
    }

    public func claimDecision(profile: String, approval: String, decision: String, line: String) throws -> RecordedDecision? {
        try pool.write { db in
            try db.execute(sql: """
                INSERT OR IGNORE INTO approval_decision (profile, id, decision, line) VALUES (?, ?, ?, ?)
                """, arguments: [profile, approval, decision, line])
            if db.changesCount == 1 { return nil }
            let row = try Row.fetchOne(db, sql: "SELECT decision, line FROM approval_decision WHERE profile = ? AND id = ?",
                                       arguments: [profile, approval])!
            return RecordedDecision(decision: row["decision"], line: row["line"])
        }
    }

    public func settleDecision(profile: String, approval: String, claim: String, line: String) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE approval_decision SET line = ? WHERE profile = ? AND id = ? AND line = ?",
                           arguments: [line, profile, approval, claim])
        }
    }

    public func withdrawDecision(profile: String, approval: String, line: String) throws {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM approval_decision WHERE profile = ? AND id = ? AND line = ?",
                           arguments: [profile, approval, line])
        }
    }

    /// The recorded answer to an approval, if any: one given through the API, else an
    /// `approval.resolved` the backend reported (answered elsewhere).
    public func decision(profile: String, approval: String) throws -> RecordedDecision? {
        try pool.read { db in
            if let row = try Row.fetchOne(db, sql: "SELECT decision, line FROM approval_decision WHERE profile = ? AND id = ?",
                                          arguments: [profile, approval]) {
                return RecordedDecision(decision: row["decision"], line: row["line"])
            }
            let key = EventDedupKey.join(profile: profile, type: "approval.resolved", [approval])
            guard let line = try String.fetchOne(db, sql: "SELECT line FROM event WHERE dedup_key = ?", arguments: [key])
            else { return nil }
            let decision = (try? JSONParser.parse(line))?["data"]?["decision"]?.string ?? "unknown"
            return RecordedDecision(decision: decision, line: line)
        }
    }

    /// Whether an `approval.requested` with this id was ever logged for the profile.
    public func wasRequested(profile: String, approval: String) throws -> Bool {
        try pool.read { db in
            let key = EventDedupKey.join(profile: profile, type: "approval.requested", [approval])
            return try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM event WHERE dedup_key = ?)", arguments: [key]) ?? false
        }
    }
}
