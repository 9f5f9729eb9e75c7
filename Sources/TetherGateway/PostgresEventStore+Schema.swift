import PostgresNIO

/// The shared log's schema, created and migrated by the gateway itself: each version's
/// statements run once, in one transaction, under a lock, so replicas starting together migrate
/// once. The tables mirror the SQLite log's (`EventLog.migrator`).
extension PostgresEventStore {
    static let migrations: [[PostgresQuery]] = [
        [
            """
            CREATE TABLE event (
                seq BIGINT PRIMARY KEY,
                ts DOUBLE PRECISION NOT NULL,
                type TEXT NOT NULL,
                profile TEXT,
                session TEXT,
                dedup_key TEXT UNIQUE,
                line TEXT NOT NULL
            )
            """,
            "CREATE INDEX event_ts ON event (ts)",
            "CREATE INDEX event_profile ON event (profile, seq)",
            // The last seq handed out and the highest one retention deleted: one row, whose lock
            // orders the appends of every replica.
            """
            CREATE TABLE log_counter (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                last_seq BIGINT NOT NULL,
                trimmed_through BIGINT NOT NULL
            )
            """,
            "INSERT INTO log_counter (id, last_seq, trimmed_through) VALUES (1, 0, 0)",
            "CREATE TABLE retired_dedup (key TEXT PRIMARY KEY, seq BIGINT NOT NULL)",
            "CREATE INDEX retired_dedup_seq ON retired_dedup (seq)",
            """
            CREATE TABLE approval_decision (
                profile TEXT NOT NULL, id TEXT NOT NULL, decision TEXT NOT NULL, line TEXT NOT NULL,
                PRIMARY KEY (profile, id)
            )
            """,
            """
            CREATE TABLE approval_push (
                profile TEXT NOT NULL, id TEXT NOT NULL, delivered BOOLEAN NOT NULL DEFAULT FALSE,
                PRIMARY KEY (profile, id)
            )
            """,
            "CREATE TABLE gateway_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
            "CREATE TABLE pairing_code (code TEXT PRIMARY KEY, expires DOUBLE PRECISION NOT NULL)",
            """
            CREATE TABLE session_model (
                profile TEXT NOT NULL, session TEXT NOT NULL, model TEXT NOT NULL,
                PRIMARY KEY (profile, session)
            )
            """,
        ],
        [
            "CREATE TABLE login (cookie TEXT PRIMARY KEY, started DOUBLE PRECISION NOT NULL, last_used DOUBLE PRECISION NOT NULL)",
            "CREATE INDEX login_last_used ON login (last_used)",
        ],
    ]

    /// An arbitrary constant: the advisory lock key under which a replica migrates.
    static let migrationLock: Int64 = 0x7465_7468_6572_0001

    func migrate() async throws {
        let logger = logger
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS tether_schema (version INTEGER NOT NULL)", logger: logger)
            var version = 0
            for try await value in try await connection.query("SELECT version FROM tether_schema", logger: logger).decode(Int.self) {
                version = value
            }
            guard version <= Self.migrations.count else {
                throw OpenError(location: "\(location)", reason: "its schema is version \(version), newer than this tether knows (\(Self.migrations.count)); upgrade tether")
            }
            for statements in Self.migrations.dropFirst(version) {
                for statement in statements { try await connection.query(statement, logger: logger) }
            }
            try await connection.query("DELETE FROM tether_schema", logger: logger)
            try await connection.query("INSERT INTO tether_schema (version) VALUES (\(Self.migrations.count))", logger: logger)
        }
    }
}
