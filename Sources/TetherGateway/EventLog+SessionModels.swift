import GRDB

/// The model a session was created with (`POST …/sessions {model}`): its turns use it unless a
/// turn names another. Kept in the gateway's database, so it outlives a restart.
extension EventLog {
    static func registerSessionModelMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4 session models") { db in
            try db.execute(sql: """
                CREATE TABLE session_model (profile TEXT NOT NULL, session TEXT NOT NULL, model TEXT NOT NULL,
                                            PRIMARY KEY (profile, session))
                """)
        }
    }

    public func setModel(_ model: String, profile: String, session: String) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO session_model (profile, session, model) VALUES (?, ?, ?)",
                           arguments: [profile, session, model])
        }
    }

    public func model(profile: String, session: String) throws -> String? {
        try pool.read { db in
            try String.fetchOne(db, sql: "SELECT model FROM session_model WHERE profile = ? AND session = ?", arguments: [profile, session])
        }
    }
}
