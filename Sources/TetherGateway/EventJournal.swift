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
        let logged: LoggedEvent? = try order.withLock { _ in
            guard let logged = try log.append(event) else { return nil }
            broadcast.publish(logged)
            return logged
        }
        if let logged {
            for observer in observers.withLock({ $0 }) { observer(logged, event) }
        }
        return logged
    }
}
