import GRDB

/// Login cookies (`KeptLogins`), kept in the log's database so a restart keeps them. The file is
/// private to its user (`PrivateFile`), as for pairing codes.
extension EventLog {
    static func registerLoginMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5 logins") { db in
            try db.execute(sql: "CREATE TABLE login (cookie TEXT PRIMARY KEY, started REAL NOT NULL, last_used REAL NOT NULL)")
            try db.execute(sql: "CREATE INDEX login_last_used ON login(last_used)")
        }
    }

    public func saveLogin(_ cookie: String, at now: Double, keeping: Int) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO login (cookie, started, last_used) VALUES (?, ?, ?)", arguments: [cookie, now, now])
            try db.execute(sql: """
                DELETE FROM login WHERE cookie IN (SELECT cookie FROM login ORDER BY last_used DESC LIMIT -1 OFFSET ?)
                """, arguments: [keeping])
        }
    }

    public func login(_ cookie: String) throws -> LoginRecord? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT started, last_used FROM login WHERE cookie = ?", arguments: [cookie])
                .map { LoginRecord(started: $0["started"], lastUsed: $0["last_used"]) }
        }
    }

    public func touchLogin(_ cookie: String, at now: Double) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE login SET last_used = MAX(last_used, ?) WHERE cookie = ?", arguments: [now, cookie])
        }
    }

    public func deleteLogin(_ cookie: String) throws {
        try pool.write { db in try db.execute(sql: "DELETE FROM login WHERE cookie = ?", arguments: [cookie]) }
    }

    public func deleteLogins(usedBefore: Double, startedBefore: Double) throws {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM login WHERE last_used <= ? OR started <= ?", arguments: [usedBefore, startedBefore])
        }
    }
}
