import Logging

/// A log that several gateway replicas share (`PostgresEventStore`): besides the log itself, it
/// tells a replica when another appended, and hands each profile's subscription to one replica
/// at a time.
public protocol SharedEventStore: EventStore {
    /// Until cancelled: calls `appended` whenever any replica committed events (it may call it
    /// more often; it reconnects by itself when its connection fails).
    func watchAppends(logger: Logger, _ appended: @escaping @Sendable () -> Void) async

    /// Waits until this replica holds `profile`'s lease, then runs `body` for as long as it holds
    /// it: when the lease is lost (its connection to the database failed), `body` is cancelled and
    /// this returns, for the caller to wait for the lease again. Returns when cancelled.
    func holdingLease(profile: String, logger: Logger, _ body: @escaping @Sendable () async -> Void) async
}
