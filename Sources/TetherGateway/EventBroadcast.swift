import NIOCore
import Synchronization

/// Fans every appended event out to the live clients. The event's SSE frame is encoded once and
/// the same bytes are handed to every client whose filter admits it. A client never slows the
/// gateway: each has a bounded backlog (events and bytes not yet taken by its writer), and one
/// that falls past it is cut off — told through `onOverflow` so its connection can be closed —
/// and resumes from the log with `Last-Event-ID`.
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
        /// A wake-up of every client with queued events is on its way (`writeGap` > 0).
        var wakeScheduled = false
    }
    private let state = Mutex(State())
    let limits: Limits
    /// Socket writes a second, all live clients together, that the gateway aims to stay under:
    /// each write costs a wake-up, a hop to the event loop and a system call whatever it
    /// carries, so with many clients each one writes what accumulated in a short gap
    /// (`writeGap`) instead of one write per event.
    let writesPerSecond: Int

    public init(limits: Limits = .standard, writesPerSecond: Int = 50_000) {
        self.limits = limits
        self.writesPerSecond = writesPerSecond
    }

    /// The least time between two wake-ups of one client's writer: zero (each event wakes its
    /// clients) while the clients together stay under `writesPerSecond` at one write a
    /// millisecond each, else their share of the budget (1,000 clients: 20 ms). An event that
    /// finds its client woken less than a gap ago waits for one timer that wakes every client
    /// with events queued: each writes all that came meanwhile in one write.
    static func writeGap(clients: Int, writesPerSecond: Int) -> Duration {
        guard clients * 1000 > writesPerSecond else { return .zero }
        return .microseconds(Int64(clients) * 1_000_000 / Int64(writesPerSecond))
    }

    /// A new live subscription, receiving every event published from now on that `filter`
    /// admits (nil: every event).
    public func subscribe(matching filter: EventQuery? = nil) -> EventSubscription {
        state.withLock { state in
            let subscription = EventSubscription(id: state.nextID, limits: limits, filter: filter, broadcast: self)
            state.nextID += 1
            if state.closed { subscription.finish(overflowed: false) } else { state.subscribers[subscription.id] = subscription }
            return subscription
        }
    }

    /// Hands `event` to every subscriber; called in seq order (the journal serializes appends).
    public func publish(_ event: LoggedEvent) {
        let (subscribers, gap, schedule) = state.withLock { state -> ([EventSubscription], Duration, Bool) in
            let gap = Self.writeGap(clients: state.subscribers.count, writesPerSecond: writesPerSecond)
            let schedule = gap > .zero && !state.wakeScheduled
            if schedule { state.wakeScheduled = true }
            return (Array(state.subscribers.values), gap, schedule)
        }
        guard !subscribers.isEmpty else { return }
        let frame = SSEFrame.buffer(event)
        for subscriber in subscribers where !subscriber.offer(event, frame: frame, gap: gap) {
            remove(subscriber.id)
        }
        if schedule {
            Task {
                try? await Task.sleep(for: gap)
                let waiting = self.state.withLock { state in
                    state.wakeScheduled = false
                    return Array(state.subscribers.values)
                }
                for subscriber in waiting { subscriber.wakeIfQueued() }
            }
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
