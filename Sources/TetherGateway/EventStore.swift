import Foundation
import TetherCore

/// Where the gateway's log lives: SQLite on one machine (`EventLog`, the embedded default), or
/// PostgreSQL shared by a fleet of replicas (`PostgresEventStore`). Every rule of the log is each
/// store's to keep: the duplicate rule (`EventDedupKey`, across replicas too), seqs strictly
/// increasing and visible in seq order, one transaction per appended batch, retention's
/// `trimmedThrough`. Async because a server's store answers over the network; the SQLite store's
/// methods are synchronous and satisfy these requirements as they are.
public protocol EventStore: Sendable {
    /// Appends `events` in order, in one transaction; nil for each event the duplicate rule drops.
    func append(_ events: [Event]) async throws -> [LoggedEvent?]
    /// Up to `limit` events after `seq`, in seq order, matching `filter`.
    func events(after seq: Int64, matching filter: EventQuery, limit: Int) async throws -> [LoggedEvent]
    /// A page of a replay with the kept range as of the same read.
    func page(after seq: Int64, matching filter: EventQuery, limit: Int) async throws -> EventLog.Page
    /// The last seq ever handed out (0 for a new log).
    func lastSeq() async throws -> Int64
    /// The highest seq retention has deleted (0 when it never deleted anything).
    func trimmedThrough() async throws -> Int64
    /// The receive time of the profile's last logged event, nil when it has none.
    func lastTimestamp(profile: String) async throws -> Double?
    /// Deletes events older than `cutoff` (epoch milliseconds); returns how many went.
    @discardableResult func trim(olderThan cutoff: Double) async throws -> Int

    /// Records the first answer to an approval; returns the one recorded after the call.
    @discardableResult
    func recordDecision(profile: String, approval: String, decision: String, line: String) async throws -> EventLog.RecordedDecision
    /// Records `decision` as the answer, before the backend hears it, unless one is recorded
    /// (here or by another replica): nil when this call recorded it, else the recorded answer.
    func claimDecision(profile: String, approval: String, decision: String, line: String) async throws -> EventLog.RecordedDecision?
    /// Replaces a claim's line with the `approval.resolved` the backend answered with.
    func settleDecision(profile: String, approval: String, claim: String, line: String) async throws
    /// Takes back a claim (the backend refused it or could not be reached): it may be answered again.
    func withdrawDecision(profile: String, approval: String, line: String) async throws
    func decision(profile: String, approval: String) async throws -> EventLog.RecordedDecision?
    func wasRequested(profile: String, approval: String) async throws -> Bool

    /// This gateway's id, made once and kept with the log (every replica of a fleet shares it).
    func gatewayID() async throws -> String
    /// The cursor of `profile`'s last logged event that has one.
    func lastCursor(profile: String) async throws -> String?

    func mintPairingCode(now: Date, lifetime: TimeInterval) async throws -> PairingCode
    func redeemPairingCode(_ code: String, now: Date) async throws -> Bool

    func claimPush(profile: String, approval: String) async throws -> Bool
    func markPushDelivered(profile: String, approval: String) async throws
    func undeliveredPushes() async throws -> [(profile: String, approval: String, line: String)]

    /// Keeps a new login cookie; past `keeping` logins, those used longest ago go.
    func saveLogin(_ cookie: String, at now: Double, keeping: Int) async throws
    func login(_ cookie: String) async throws -> LoginRecord?
    func touchLogin(_ cookie: String, at now: Double) async throws
    func deleteLogin(_ cookie: String) async throws
    func deleteLogins(usedBefore: Double, startedBefore: Double) async throws

    func setModel(_ model: String, profile: String, session: String) async throws
    func model(profile: String, session: String) async throws -> String?
}

extension EventStore {
    public func append(_ event: Event) async throws -> LoggedEvent? {
        try await append([event])[0]
    }

    public func events(after seq: Int64, matching filter: EventQuery = EventQuery(), limit: Int = 500) async throws -> [LoggedEvent] {
        try await events(after: seq, matching: filter, limit: limit)
    }

    public func page(after seq: Int64, matching filter: EventQuery = EventQuery(), limit: Int = 500) async throws -> EventLog.Page {
        try await page(after: seq, matching: filter, limit: limit)
    }

    public func mintPairingCode(now: Date = Date()) async throws -> PairingCode {
        try await mintPairingCode(now: now, lifetime: PairingCode.lifetime)
    }

    public func redeemPairingCode(_ code: String) async throws -> Bool {
        try await redeemPairingCode(code, now: Date())
    }
}

extension EventLog: EventStore {}
