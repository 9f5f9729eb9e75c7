import Foundation
import Logging
import PostgresNIO
import Synchronization
import TetherCore

/// The log in PostgreSQL, shared by every replica of a fleet (gateway.md, "A fleet"). Seqs come
/// from one counter row, taken `FOR UPDATE` in the appending transaction and released by its
/// commit: the next batch cannot take seq N+1 before the batch holding N is committed and
/// visible, so a reader that saw N+1 has seen N (a sequence would not give this). The duplicate
/// rule is checked under the same lock, and a unique index on the key backs it.
public final class PostgresEventStore: Sendable {
    let client: PostgresClient
    let location: PostgresLocation
    let logger: Logger
    let retiredDedupLimit: Int
    /// How long a request's call may wait for the database (`PostgresEventStore+Deadline`).
    let operationDeadline: Duration
    private let running: Mutex<Task<Void, Never>?>

    /// The NOTIFY channel an append announces its last seq on.
    static let appendChannel = "tether_log"

    public struct OpenError: Error, CustomStringConvertible {
        public let location: String
        public let reason: String
        public var description: String { "cannot open the gateway's event log in \(location): \(reason)" }
    }

    /// Connects, then creates or migrates the schema. `maximumConnections`: the pool's size, beside
    /// which each served profile's lease holds a connection of its own.
    /// `operationDeadline`: how long a request's call may wait for the database before it fails.
    public static func open(_ location: PostgresLocation, logger: Logger, leases: Int = 0,
                            retiredDedupLimit: Int = EventLog.standardRetiredDedupLimit,
                            operationDeadline: Duration = .seconds(10)) async throws -> PostgresEventStore {
        do {
            // One connection first: the pool retries a failing connect without end, and a wrong
            // password or a server that is not there must stop the start, saying which.
            let probe = try await PostgresConnection.connect(on: PostgresClient.defaultEventLoopGroup.next(),
                                                             configuration: try location.connectionConfiguration(), id: 0, logger: logger)
            try await probe.close()
        } catch {
            throw OpenError(location: "\(location)", reason: PostgresFailure.reason(error))
        }
        let store = PostgresEventStore(location: location, logger: logger, maximumConnections: 8 + leases,
                                       retiredDedupLimit: retiredDedupLimit, operationDeadline: operationDeadline)
        do {
            try await store.migrate()
        } catch {
            store.close()
            throw OpenError(location: "\(location)", reason: PostgresFailure.reason(error))
        }
        return store
    }

    private init(location: PostgresLocation, logger: Logger, maximumConnections: Int, retiredDedupLimit: Int,
                 operationDeadline: Duration) {
        precondition(retiredDedupLimit > 0, "keep at least one retired dedup key")
        self.operationDeadline = operationDeadline
        self.location = location
        self.logger = logger
        self.retiredDedupLimit = retiredDedupLimit
        client = PostgresClient(configuration: location.clientConfiguration(maximumConnections: maximumConnections),
                                backgroundLogger: logger)
        let client = client
        running = Mutex(Task { await client.run() })
    }

    /// Closes every connection (a lease held through one is released by the server).
    public func close() {
        running.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    deinit { close() }
}

extension PostgresEventStore: EventStore {
    public func append(_ events: [Event]) async throws -> [LoggedEvent?] {
        guard !events.isEmpty else { return [] }
        let rows = EventRow.prepare(events)
        let keys = Array(Set(rows.compactMap(\.key)))
        let lease = Self.heldLease
        do {
            return try await appendRows(rows, keys: keys, lease: lease)
        } catch let failure as PostgresTransactionError where failure.closureError is LeaseLost {
            throw failure.closureError ?? failure  // said plainly: the subscription logs it
        }
    }

    private func appendRows(_ rows: [EventRow], keys: [String],
                            lease: HeldLease?) async throws -> [LoggedEvent?] {
        let logger = logger
        return try await withTransaction { connection -> [LoggedEvent?] in
            // The counter row's lock orders every append of every replica, until this commit.
            let counter = try await connection.query("SELECT last_seq FROM log_counter WHERE id = 1 FOR UPDATE", logger: logger)
            var last: Int64 = 0
            for try await value in counter.decode(Int64.self) { last = value }
            if let lease { try await Self.checkLease(lease, on: connection, logger: logger) }
            var seen = Set<String>()
            if !keys.isEmpty {
                let found = try await connection.query("""
                    SELECT dedup_key FROM event WHERE dedup_key = ANY(\(keys))
                    UNION ALL SELECT key FROM retired_dedup WHERE key = ANY(\(keys))
                    """, logger: logger)
                for try await key in found.decode(String.self) { seen.insert(key) }
            }
            var logged: [LoggedEvent?] = []
            logged.reserveCapacity(rows.count)
            var seqs: [Int64] = [], stamps: [Double] = [], types: [String] = [], profiles: [String] = [],
                sessions: [String] = [], dedupKeys: [String] = [], lines: [String] = []
            for row in rows {
                if let key = row.key {
                    guard seen.insert(key).inserted else {
                        logged.append(nil)
                        continue
                    }
                }
                last += 1
                let event = row.event
                seqs.append(last)
                stamps.append(event.ts)
                types.append(event.type.rawValue)
                profiles.append(event.profile ?? "")
                sessions.append(event.session ?? "")
                dedupKeys.append(row.key ?? "")
                lines.append(row.line)
                logged.append(row.logged(seq: last))
            }
            guard !seqs.isEmpty else { return logged }
            // One statement (one round trip) for the batch's rows, the counter and the notice, which
            // every listening replica gets when (and only if) this commits. An absent profile,
            // session or key travels as "".
            try await connection.query("""
                WITH inserted AS (
                    INSERT INTO event (seq, ts, type, profile, session, dedup_key, line)
                    SELECT seq, ts, type, NULLIF(profile, ''), NULLIF(session, ''), NULLIF(dedup_key, ''), line
                    FROM unnest(\(seqs)::bigint[], \(stamps)::float8[], \(types)::text[], \(profiles)::text[],
                                \(sessions)::text[], \(dedupKeys)::text[], \(lines)::text[])
                        AS batch(seq, ts, type, profile, session, dedup_key, line)
                    RETURNING 1
                ), counted AS (
                    UPDATE log_counter SET last_seq = \(last) WHERE id = 1 RETURNING 1
                )
                SELECT pg_notify(\(Self.appendChannel), \(String(last)))
                """, logger: logger)
            return logged
        }
    }

    public func events(after seq: Int64, matching filter: EventQuery, limit: Int) async throws -> [LoggedEvent] {
        let logger = logger
        return try await withConnection { connection in
            try await Self.events(connection, after: seq, matching: filter, limit: limit, logger: logger)
        }
    }

    public func page(after seq: Int64, matching filter: EventQuery, limit: Int) async throws -> EventLog.Page {
        let logger = logger
        return try await withTransaction { connection in
            // One snapshot for the events and the kept range, as SQLite's read transaction gives.
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            let (last, trimmed) = try await Self.counters(connection, logger: logger)
            let events = try await Self.events(connection, after: seq, matching: filter, limit: limit, logger: logger)
            return EventLog.Page(events: events, trimmedThrough: trimmed, lastSeq: last)
        }
    }

    public func lastSeq() async throws -> Int64 {
        let logger = logger
        return try await withConnection { connection in try await Self.counters(connection, logger: logger).last }
    }

    public func trimmedThrough() async throws -> Int64 {
        let logger = logger
        return try await withConnection { connection in try await Self.counters(connection, logger: logger).trimmed }
    }

    public func lastTimestamp(profile: String) async throws -> Double? {
        try await first(Double.self, "SELECT ts FROM event WHERE profile = \(profile) ORDER BY seq DESC LIMIT 1")
    }

    static func events(_ connection: PostgresConnection, after seq: Int64, matching filter: EventQuery, limit: Int,
                       logger: Logger) async throws -> [LoggedEvent] {
        var after = seq
        var found: [LoggedEvent] = []
        found.reserveCapacity(limit)
        // Filtered in Swift (prefix rules on type), in reads of up to 1,000 rows, as in SQLite.
        while found.count < limit {
            let rowsWanted = filter == EventQuery() ? limit - found.count : 1000
            let rows = try await connection.query("""
                SELECT seq, type, profile, session, line FROM event WHERE seq > \(after) ORDER BY seq LIMIT \(rowsWanted)
                """, logger: logger)
            var read = 0
            for try await (seq, type, profile, session, line) in rows.decode((Int64, String, String?, String?, String).self) {
                read += 1
                after = seq
                guard found.count < limit else { continue }
                let event = LoggedEvent(seq: seq, type: type, profile: profile, session: session, line: line)
                if filter.matches(event) { found.append(event) }
            }
            if read < rowsWanted { break }
        }
        return found
    }

    static func counters(_ connection: PostgresConnection, logger: Logger) async throws -> (last: Int64, trimmed: Int64) {
        let rows = try await connection.query("SELECT last_seq, trimmed_through FROM log_counter WHERE id = 1", logger: logger)
        for try await (last, trimmed) in rows.decode((Int64, Int64).self) { return (last, trimmed) }
        return (0, 0)
    }

    /// The first column of the first row, nil when there is none (or it is NULL).
    func first<Value: PostgresDecodable & Sendable>(_ type: Value.Type, _ query: PostgresQuery) async throws -> Value?
    where Value._DecodableType == Value {
        let rows = try await self.query(query, logger: logger)
        for try await value in rows.decode(Value?.self) { return value }
        return nil
    }
}
