import Logging
import Synchronization
import TetherCore

/// The one place events enter the gateway: append to the log, then publish to live clients, in
/// seq order (a client drops live events at or below the last seq it replayed, which is only
/// sound if publication never reorders). With the embedded SQLite log, append and publish run
/// under one lock. With a log shared by replicas, what this replica appends and what the others
/// append are published alike by the log's tail, which reads the committed rows in seq order.
public final class EventJournal: Sendable {
    public let log: any EventStore
    public let broadcast: EventBroadcast
    private let order = Mutex(())
    private let observers = Mutex<[@Sendable (LoggedEvent, Event) -> Void]>([])
    private let route: Route

    /// How appended events reach the live clients.
    private enum Route: Sendable {
        /// Published by the appender, under `order`.
        case embedded(EventLog)
        /// Published by the tail, from the committed rows.
        case shared(LogTail)
    }

    public init(log: any EventStore, broadcast: EventBroadcast) {
        self.log = log
        self.broadcast = broadcast
        if let local = log as? EventLog {
            route = .embedded(local)
        } else {
            route = .shared(LogTail(log: log, broadcast: broadcast))
        }
    }

    /// The shared log's reader (nil for the embedded log): it must run for live events to flow.
    var tail: LogTail? {
        if case .shared(let tail) = route { return tail }
        return nil
    }

    /// Runs `observer` for every appended event (after it is logged and published), e.g. push.
    public func observe(_ observer: @escaping @Sendable (LoggedEvent, Event) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Appends and publishes; nil when the duplicate rule dropped it.
    @discardableResult
    public func record(_ event: Event) async throws -> LoggedEvent? {
        try await record([event])[0]
    }

    /// Appends a batch in one transaction, then publishes what was logged, in seq order; nil
    /// for each event the duplicate rule dropped. Nothing is published before its commit.
    @discardableResult
    public func record(_ events: [Event]) async throws -> [LoggedEvent?] {
        let logged: [LoggedEvent?]
        switch route {
        case .embedded(let local):
            logged = try order.withLock { _ in
                let logged = try local.append(events)
                for case let event? in logged { broadcast.publish(event) }
                return logged
            }
        case .shared(let tail):
            try await tail.start()
            logged = try await log.append(events)
            // Returns once this replica's clients were handed them (or the caller was cancelled: a
            // shutdown does not wait on a database that went away): a caller may rely on it.
            let own = logged.compactMap { $0 }
            if let last = own.last, !tail.publishOwn(own) { await tail.published(through: last.seq) }
        }
        let observers = observers.withLock { $0 }
        if !observers.isEmpty {
            for (logged, event) in zip(logged, events) {
                guard let logged else { continue }
                for observer in observers { observer(logged, event) }
            }
        }
        return logged
    }
}
