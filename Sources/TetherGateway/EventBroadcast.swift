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
