import NIOCore
import Synchronization

/// Fans every appended event out to the live clients. The event's SSE frame is encoded once and
/// the same bytes are handed to every client whose filter admits it; a stream's client is then
/// written from its connection's event loop (`LoopFanOut`, one per loop). A client never slows
/// the gateway: each has a bounded backlog (events and bytes not yet written to its
/// connection), and one that falls past it is cut off — told through `onOverflow` so its
/// connection can be closed — and resumes from the log with `Last-Event-ID`.
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
        /// `subscribers`' values, kept as an array: each event takes it whole (one retain), not
        /// a new copy of a thousand references.
        var list: [EventSubscription] = []
        var closed = false
        /// The writers of the event loops that live clients' connections are on.
        var loops: [ObjectIdentifier: LoopFanOut] = [:]
        /// Events published in the second that began at `windowStart`, and in the one before.
        var windowStart = ContinuousClock.now
        var windowEvents = 0
        var lastWindowEvents = 0

        /// Events a second lately: the last whole second, or this one when it already has more.
        mutating func noteEvent(now: ContinuousClock.Instant) -> Int {
            if now - windowStart >= .seconds(1) {
                lastWindowEvents = now - windowStart < .seconds(2) ? windowEvents : 0
                windowStart = now
                windowEvents = 0
            }
            windowEvents += 1
            return max(windowEvents, lastWindowEvents)
        }
    }
    private let state = Mutex(State())
    let limits: Limits
    /// Socket writes a second, all live clients together, that the gateway aims to stay under:
    /// each write costs a trip through the connection's pipeline and a system call whatever it
    /// carries, so with many clients each one writes what accumulated in a short gap
    /// (`writeGap`) instead of one write per event.
    let writesPerSecond: Int

    public init(limits: Limits = .standard, writesPerSecond: Int = 25_000) {
        self.limits = limits
        self.writesPerSecond = writesPerSecond
    }

    /// The least time between two passes of an event loop's writer: zero (each event is written
    /// at once) while a write per event and client stays under `writesPerSecond`, else the
    /// clients' share of the budget. An event that finds its loop's last pass less than a gap
    /// ago waits for the loop's one timer, and each of its clients writes all that came
    /// meanwhile in one write.
    static func writeGap(clients: Int, eventsPerSecond: Int, writesPerSecond: Int) -> Duration {
        guard clients * eventsPerSecond > writesPerSecond else { return .zero }
        return .microseconds(Int64(clients) * 1_000_000 / Int64(writesPerSecond))
    }

    /// A new live subscription, receiving every event published from now on that `filter`
    /// admits (nil: every event).
    public func subscribe(matching filter: EventQuery? = nil) -> EventSubscription {
        state.withLock { state in
            let subscription = EventSubscription(id: state.nextID, limits: limits, filter: filter, broadcast: self)
            state.nextID += 1
            if state.closed {
                subscription.finish(overflowed: false)
            } else {
                state.subscribers[subscription.id] = subscription
                state.list.append(subscription)
            }
            return subscription
        }
    }

    /// The writer of `loop`'s live clients.
    func fanOut(for loop: any EventLoop) -> LoopFanOut {
        state.withLock { state in
            if let fanOut = state.loops[ObjectIdentifier(loop)] { return fanOut }
            let fanOut = LoopFanOut(loop: loop)
            state.loops[ObjectIdentifier(loop)] = fanOut
            return fanOut
        }
    }

    /// Hands `event` to every subscriber; called in seq order (the journal serializes appends).
    public func publish(_ event: LoggedEvent) {
        let (subscribers, gap) = state.withLock { state -> ([EventSubscription], Duration) in
            let rate = state.noteEvent(now: .now)
            let gap = Self.writeGap(clients: state.subscribers.count, eventsPerSecond: rate, writesPerSecond: writesPerSecond)
            return (state.list, gap)
        }
        guard !subscribers.isEmpty else { return }
        let frame = SSEFrame.buffer(event)
        for subscriber in subscribers where !subscriber.offer(event, frame: frame, gap: gap) {
            remove(subscriber.id)
        }
    }

    func remove(_ id: Int) {
        state.withLock { state in
            guard state.subscribers.removeValue(forKey: id) != nil else { return }
            state.list.removeAll { $0.id == id }
        }
    }

    /// Ends every subscription (shutdown): their streams finish after what they hold.
    public func closeAll() {
        let subscribers = state.withLock { state in
            state.closed = true
            defer {
                state.subscribers.removeAll()
                state.list.removeAll()
            }
            return state.list
        }
        for subscriber in subscribers { subscriber.finish(overflowed: false) }
    }

    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}
