import NIOCore
import Synchronization

/// One live client's view of the broadcast: a bounded mailbox of the events its filter admits,
/// each with its SSE frame (encoded once by the broadcast for every client). An event the filter
/// excludes is neither queued nor wakes anything. A stream's client is written from its
/// connection's event loop (`writeLive`): it is marked ready on that loop's `LoopFanOut`, whose
/// next pass writes all that is queued in one write. A long poll waits in `next()` instead.
public final class EventSubscription: Sendable {
    let id: Int
    /// What the client's writer takes next: an event's seq with its frame, or a reminder to send
    /// a heartbeat. Only the seq of the event: the rest is in the frame, and each field held
    /// here would be retained once per client and event.
    public enum Delivery: Sendable {
        case event(seq: Int64, frame: ByteBuffer)
        case heartbeat
    }

    /// The live phase of a stream: where its frames go and what was sent.
    private struct Live {
        let sink: any LiveFrameSink
        let fanOut: LoopFanOut
        /// The last seq written (the replay's last, then the live ones): nothing twice at the seam.
        var lastSent: Int64
        /// On the loop's ready list, or about to be: not marked again until its pass took the queue.
        var marked = true
        /// Resumed when the stream is over (after what a graceful end left queued was written).
        var done: CheckedContinuation<Void, Never>?
        /// Since when the connection has not accepted more (nil: it does).
        var blockedSince: ContinuousClock.Instant?
    }

    private struct Mailbox {
        var queued: [Delivery] = []
        var events = 0
        var bytes = 0
        var finished = false
        var overflowed = false
        var onOverflow: (@Sendable () -> Void)?
        var waiter: CheckedContinuation<Void, Never>?
        var live: Live?

        /// Who to wake for what was just queued: the loop (once per pass), or `next()`'s waiter.
        mutating func wake() -> Wake {
            // In place: called for every event and client, so the state is not copied out.
            if live != nil {
                guard !live!.marked else { return .none }
                live!.marked = true
                return .loop(live!.fanOut)
            }
            defer { waiter = nil }
            return waiter.map(Wake.waiter) ?? .none
        }
    }

    private enum Wake {
        case none
        case waiter(CheckedContinuation<Void, Never>)
        case loop(LoopFanOut)
    }

    private let mailbox = Mutex(Mailbox())
    private let limits: EventBroadcast.Limits
    /// Which events are queued; nil: all.
    let filter: EventQuery?
    private weak let broadcast: EventBroadcast?

    init(id: Int, limits: EventBroadcast.Limits, filter: EventQuery?, broadcast: EventBroadcast) {
        self.id = id
        self.limits = limits
        self.filter = filter
        self.broadcast = broadcast
    }

    /// Called when the backlog overflows (at most once); set before reading.
    public func onOverflow(_ action: @escaping @Sendable () -> Void) {
        mailbox.withLock { $0.onOverflow = action }
    }

    public var overflowed: Bool { mailbox.withLock { $0.overflowed } }

    /// How many events wait to be written.
    var queuedEvents: Int { mailbox.withLock { $0.events } }

    /// Since when the client's connection has accepted nothing more (nil: it takes what it is
    /// written), for the stall watchdog.
    var blockedSince: ContinuousClock.Instant? { mailbox.withLock { $0.live?.blockedSince } }

    /// Everything queued since the last call, in order, waiting until there is something; nil
    /// once the subscription ended (and what it held was taken) or the task was cancelled.
    public func next() async -> [Delivery]? {
        while true {
            if Task.isCancelled { return nil }
            let taken: [Delivery]? = mailbox.withLock { box in
                if !box.queued.isEmpty {
                    defer { box.queued.removeAll(keepingCapacity: true); box.events = 0; box.bytes = 0 }
                    return box.queued
                }
                return box.finished ? [] : nil
            }
            if let taken { return taken.isEmpty ? nil : taken }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ready = mailbox.withLock { box -> Bool in
                        if !box.queued.isEmpty || box.finished { return true }
                        box.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                wakeWaiter()
            }
        }
    }

    /// Writes live events to `sink` from its event loop until the subscription ends (shutdown,
    /// overflow, the connection closed, the task cancelled); events up to `lastSent` are not
    /// written again. The first write is run by the loop after whatever was written to the
    /// connection before this call (the loop runs its tasks in order).
    func writeLive(to sink: any LiveFrameSink, after lastSent: Int64, fanOut: LoopFanOut) async {
        // Held strongly: a weak reference would give the subscription a side table, and every
        // retain of it (once per event in the broadcast) would take the slow path.
        sink.whenClosed { self.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                mailbox.withLock { box in
                    box.live = Live(sink: sink, fanOut: fanOut, lastSent: lastSent, done: continuation)
                }
                sink.eventLoop.execute { self.writeQueued() }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Writes what is queued to the live sink in one write; on its event loop (`LoopFanOut`'s
    /// pass). A connection that takes nothing more is looked at again a little later on its own
    /// timer (not the loop's pass, which the other clients wait for), its events left queued,
    /// where the backlog limits apply.
    func writeQueued() {
        let now = ContinuousClock.now
        let (frames, sink, retry, done) = mailbox.withLock { box -> ([ByteBuffer], (any LiveFrameSink)?, (any EventLoop)?, CheckedContinuation<Void, Never>?) in
            guard var live = box.live else { return ([], nil, nil, nil) }
            defer { box.live = live }
            if box.overflowed {
                defer { live.done = nil }
                return ([], nil, nil, live.done)
            }
            if !box.finished, !live.sink.isWritable {
                if live.blockedSince == nil { live.blockedSince = now }
                return ([], nil, live.sink.eventLoop, nil)
            }
            live.blockedSince = nil
            live.marked = false
            var frames: [ByteBuffer] = []
            for delivery in box.queued {
                switch delivery {
                case .heartbeat:
                    frames.append(Self.heartbeatFrame)
                case .event(let seq, let frame):
                    guard seq > live.lastSent else { continue }
                    live.lastSent = seq
                    frames.append(frame)
                }
            }
            box.queued.removeAll(keepingCapacity: true)
            box.events = 0
            box.bytes = 0
            guard box.finished else { return (frames, live.sink, nil, nil) }
            defer { live.done = nil }
            return (frames, live.sink, nil, live.done)
        }
        if !frames.isEmpty { sink?.write(Self.coalesced(frames)) }
        retry?.scheduleTask(in: .milliseconds(50)) { self.writeQueued() }
        done?.resume()
    }

    static let heartbeatFrame = ByteBuffer(string: SSEFrame.heartbeat)

    /// Small frames copied into one buffer (the response's chunked encoding and the socket cost
    /// a little for each buffer); a large one (a `part.completed` holding a whole message) stays
    /// the shared buffer it is, so a thousand clients do not each hold a copy of it.
    static func coalesced(_ frames: [ByteBuffer], copyingBelow limit: Int = 4096) -> [ByteBuffer] {
        guard frames.count > 1 else { return frames }
        var result: [ByteBuffer] = []
        var small = ByteBuffer()
        for frame in frames {
            if frame.readableBytes < limit {
                var frame = frame
                small.writeBuffer(&frame)
                continue
            }
            if small.readableBytes > 0 {
                result.append(small)
                small = ByteBuffer()
            }
            result.append(frame)
        }
        if small.readableBytes > 0 { result.append(small) }
        return result
    }

    /// Queues `event` when the filter admits it; false once the subscriber is over its limits
    /// (and so finished). `gap` is the least time between two passes of a live client's loop.
    func offer(_ event: LoggedEvent, frame: ByteBuffer, gap: Duration = .zero) -> Bool {
        if let filter, !filter.matches(event) { return true }
        let size = frame.readableBytes
        let (fits, wake) = mailbox.withLock { box -> (Bool, Wake) in
            guard !box.overflowed, !box.finished else { return (false, .none) }
            guard box.events < limits.events, box.bytes + size <= limits.bytes else { return (false, .none) }
            box.queued.append(.event(seq: event.seq, frame: frame))
            box.events += 1
            box.bytes += size
            return (true, box.wake())
        }
        guard fits else {
            finish(overflowed: true)
            return false
        }
        perform(wake, gap: gap)
        return true
    }

    private func perform(_ wake: Wake, gap: Duration?) {
        switch wake {
        case .none: break
        case .waiter(let waiter): waiter.resume()
        case .loop(let fanOut): fanOut.ready(self, gap: gap)
        }
    }

    /// Ends the subscription: an overflowed one at once, a live one that ends gracefully after
    /// its loop wrote what it holds.
    func finish(overflowed: Bool) {
        let (action, waiter, done, wake) = mailbox.withLock { box -> ((@Sendable () -> Void)?, CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?, Wake) in
            box.finished = true
            let waiter = box.waiter
            box.waiter = nil
            guard overflowed else { return (nil, waiter, nil, box.wake()) }
            let done = box.live?.done
            box.live?.done = nil
            guard !box.overflowed else { return (nil, waiter, done, .none) }
            box.overflowed = true
            defer { box.onOverflow = nil }
            return (box.onOverflow, waiter, done, .none)
        }
        waiter?.resume()
        done?.resume()
        perform(wake, gap: .zero)
        action?()
    }

    /// Cuts the client off as if its backlog overflowed (its connection is stuck full).
    public func cutOff() {
        finish(overflowed: true)
    }

    /// Asks the writer to send a heartbeat (not queued when a heartbeat is already waiting, or
    /// the backlog is full: it has work anyway).
    public func heartbeat() {
        let wake = mailbox.withLock { box -> Wake in
            guard !box.finished, box.events < limits.events else { return .none }
            if case .heartbeat = box.queued.last { return .none }
            box.queued.append(.heartbeat)
            return box.wake()
        }
        perform(wake, gap: nil)
    }

    /// The client went away: nothing more is written.
    public func cancel() {
        let done = mailbox.withLock { box -> CheckedContinuation<Void, Never>? in
            box.finished = true
            defer { box.live?.done = nil }
            return box.live?.done
        }
        done?.resume()
        wakeWaiter()
        broadcast?.remove(id)
    }

    private func wakeWaiter() {
        mailbox.withLock { box -> CheckedContinuation<Void, Never>? in
            defer { box.waiter = nil }
            return box.waiter
        }?.resume()
    }
}
