import GRDB

/// Approval pushes: one per approval id, even across restarts.
extension EventLog {
    /// True the first time for an approval (the caller then pushes it); false ever after.
    public func claimPush(profile: String, approval: String) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO approval_push (profile, id) VALUES (?, ?)", arguments: [profile, approval])
            return db.changesCount == 1
        }
    }

    public func markPushDelivered(profile: String, approval: String) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE approval_push SET delivered = 1 WHERE profile = ? AND id = ?", arguments: [profile, approval])
        }
    }
}

extension EventLog {
    /// Approvals whose push was claimed but not delivered (the gateway stopped while retrying),
    /// with their `approval.requested` line, so a restart goes on pushing them.
    public func undeliveredPushes() throws -> [(profile: String, approval: String, line: String)] {
        try pool.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT profile, id FROM approval_push WHERE delivered = 0")
            return try rows.compactMap { row in
                let profile: String = row["profile"]
                let approval: String = row["id"]
                let key = EventDedupKey.join(profile: profile, type: "approval.requested", [approval])
                guard let line = try String.fetchOne(db, sql: "SELECT line FROM event WHERE dedup_key = ?", arguments: [key])
                else { return nil }
                return (profile, approval, line)
            }
        }
    }
}
