import Synchronization

/// One live client's view of the broadcast: an async sequence of events with a bounded backlog.
public final class EventSubscription: Sendable {
    let id: Int
    /// What the client's writer takes next: an event, or a reminder to send a heartbeat.
    public enum Delivery: Sendable {
        case event(LoggedEvent)
        case heartbeat
    }
    public let deliveries: AsyncStream<Delivery>
    private let continuation: AsyncStream<Delivery>.Continuation
    private let limits: EventBroadcast.Limits
    private struct Backlog {
        var bytes = 0
        var overflowed = false
        var onOverflow: (@Sendable () -> Void)?
    }
    private let backlog = Mutex(Backlog())
    private weak let broadcast: EventBroadcast?

    init(id: Int, limits: EventBroadcast.Limits, broadcast: EventBroadcast) {
        self.id = id
        self.limits = limits
        self.broadcast = broadcast
        // One slot more than the event limit, so a heartbeat never counts as an overflow on its own.
        (deliveries, continuation) = AsyncStream.makeStream(of: Delivery.self, bufferingPolicy: .bufferingOldest(limits.events + 1))
    }

    /// Called when the backlog overflows (at most once); set before reading.
    public func onOverflow(_ action: @escaping @Sendable () -> Void) {
        backlog.withLock { $0.onOverflow = action }
    }

    public var overflowed: Bool { backlog.withLock { $0.overflowed } }

    /// The writer took `event` off the backlog.
    public func consumed(_ event: LoggedEvent) {
        backlog.withLock { $0.bytes -= event.line.utf8.count }
    }

    /// False once the subscriber is over its limits (and so finished).
    func offer(_ event: LoggedEvent) -> Bool {
        let size = event.line.utf8.count
        let fits = backlog.withLock { backlog -> Bool in
            guard !backlog.overflowed else { return false }
            backlog.bytes += size
            return backlog.bytes <= limits.bytes
        }
        guard fits else {
            finish(overflowed: true)
            return false
        }
        if case .dropped = continuation.yield(.event(event)) {
            finish(overflowed: true)
            return false
        }
        return true
    }

    func finish(overflowed: Bool) {
        let action = backlog.withLock { backlog -> (@Sendable () -> Void)? in
            guard overflowed, !backlog.overflowed else { return nil }
            backlog.overflowed = true
            defer { backlog.onOverflow = nil }
            return backlog.onOverflow
        }
        continuation.finish()
        action?()
    }

    /// Cuts the client off as if its backlog overflowed (its writer is stuck on a full socket).
    public func cutOff() {
        finish(overflowed: true)
    }

    /// Asks the writer to send a heartbeat (dropped when the backlog is full: it has work anyway).
    public func heartbeat() {
        continuation.yield(.heartbeat)
    }

    /// The client went away.
    public func cancel() {
        continuation.finish()
        broadcast?.remove(id)
    }
}
