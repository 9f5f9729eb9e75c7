import Synchronization

/// Fans every appended event out to the live clients. A client never slows the gateway: each
/// has a bounded backlog (events and bytes not yet taken by its writer), and one that falls past
/// it is cut off — told through `onOverflow` so its connection can be closed — and resumes from
/// the log with `Last-Event-ID`.
public final class EventBroadcast: Sendable {
    public struct Limits: Sendable {
        public var events: Int
        public var bytes: Int
        public static let standard = Limits(events: 10_000, bytes: 8 << 20)
        public init(events: Int, bytes: Int) {
            self.events = events
            self.bytes = bytes
        }
    }

    private struct State {
        var nextID = 0
        var subscribers: [Int: EventSubscription] = [:]
        var closed = false
    }
    private let state = Mutex(State())
    let limits: Limits

    public init(limits: Limits = .standard) { self.limits = limits }

    /// A new live subscription, receiving every event published from now on.
    public func subscribe() -> EventSubscription {
        state.withLock { state in
            let subscription = EventSubscription(id: state.nextID, limits: limits, broadcast: self)
            state.nextID += 1
            if state.closed { subscription.finish(overflowed: false) } else { state.subscribers[subscription.id] = subscription }
            return subscription
        }
    }

    /// Hands `event` to every subscriber; called in seq order (the journal serializes appends).
    public func publish(_ event: LoggedEvent) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers where !subscriber.offer(event) {
            remove(subscriber.id)
        }
    }

    func remove(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// Ends every subscription (shutdown): their streams finish after what they hold.
    public func closeAll() {
        let subscribers = state.withLock { state in
            state.closed = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish(overflowed: false) }
    }

    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}

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
