import Logging
import Synchronization
import TetherCore

/// The one place events enter the gateway: append to the log, then publish to live clients,
/// under one lock, so live clients see events in seq order (a client drops live events at or
/// below the last seq it replayed, which is only sound if publication never reorders).
public final class EventJournal: Sendable {
    public let log: EventLog
    public let broadcast: EventBroadcast
    private let order = Mutex(())
    private let observers = Mutex<[@Sendable (LoggedEvent, Event) -> Void]>([])

    public init(log: EventLog, broadcast: EventBroadcast) {
        self.log = log
        self.broadcast = broadcast
    }

    /// Runs `observer` for every appended event (after it is logged and published), e.g. push.
    public func observe(_ observer: @escaping @Sendable (LoggedEvent, Event) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Appends and publishes; nil when the duplicate rule dropped it.
    @discardableResult
    public func record(_ event: Event) throws -> LoggedEvent? {
        try record([event])[0]
    }

    /// Appends a batch in one transaction, then publishes what was logged, in seq order; nil
    /// for each event the duplicate rule dropped. Nothing is published before its commit.
    @discardableResult
    public func record(_ events: [Event]) throws -> [LoggedEvent?] {
        let logged: [LoggedEvent?] = try order.withLock { _ in
            let logged = try log.append(events)
            for case let event? in logged { broadcast.publish(event) }
            return logged
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
