import NIOCore
import Synchronization

/// One live client's view of the broadcast: a bounded mailbox of the events its filter admits,
/// each with its SSE frame (encoded once by the broadcast for every client). The client's
/// writer takes everything queued at once (`next()`), so a client that fell a few events
/// behind catches up in one write; an event the filter excludes never wakes it.
public final class EventSubscription: Sendable {
    let id: Int
    /// What the client's writer takes next: an event with its frame, or a reminder to send a heartbeat.
    public enum Delivery: Sendable {
        case event(LoggedEvent, frame: ByteBuffer)
        case heartbeat
    }

    private struct Mailbox {
        var queued: [Delivery] = []
        var events = 0
        var bytes = 0
        var finished = false
        var overflowed = false
        var onOverflow: (@Sendable () -> Void)?
        var waiter: CheckedContinuation<Void, Never>?
        /// When the writer was last woken for events (nil: never).
        var woken: ContinuousClock.Instant?
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

    /// How many events wait for the writer.
    var queuedEvents: Int { mailbox.withLock { $0.events } }

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
                wake()
            }
        }
    }

    /// Queues `event` when the filter admits it; false once the subscriber is over its limits
    /// (and so finished). The writer is woken at once when it was last woken `gap` or more ago
    /// (always, with no gap); else the broadcast's next `wakeIfQueued()` wakes it, with all
    /// that came meanwhile.
    func offer(_ event: LoggedEvent, frame: ByteBuffer, gap: Duration = .zero) -> Bool {
        if let filter, !filter.matches(event) { return true }
        let size = frame.readableBytes
        let (fits, waiter) = mailbox.withLock { box -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !box.overflowed, !box.finished else { return (false, nil) }
            guard box.events < limits.events, box.bytes + size <= limits.bytes else { return (false, nil) }
            box.queued.append(.event(event, frame: frame))
            box.events += 1
            box.bytes += size
            guard let waiter = box.waiter else { return (true, nil) }
            if gap > .zero {
                let now = ContinuousClock.now
                if let woken = box.woken, now - woken < gap { return (true, nil) }
                box.woken = now
            }
            box.waiter = nil
            return (true, waiter)
        }
        guard fits else {
            finish(overflowed: true)
            return false
        }
        waiter?.resume()
        return true
    }

    func finish(overflowed: Bool) {
        let (action, waiter) = mailbox.withLock { box -> ((@Sendable () -> Void)?, CheckedContinuation<Void, Never>?) in
            box.finished = true
            defer { box.waiter = nil }
            guard overflowed, !box.overflowed else { return (nil, box.waiter) }
            box.overflowed = true
            defer { box.onOverflow = nil }
            return (box.onOverflow, box.waiter)
        }
        waiter?.resume()
        action?()
    }

    /// Cuts the client off as if its backlog overflowed (its writer is stuck on a full socket).
    public func cutOff() {
        finish(overflowed: true)
    }

    /// Asks the writer to send a heartbeat (not queued when a heartbeat is already waiting, or
    /// the backlog is full: it has work anyway).
    public func heartbeat() {
        let waiter = mailbox.withLock { box -> CheckedContinuation<Void, Never>? in
            guard !box.finished, box.events < limits.events else { return nil }
            if case .heartbeat = box.queued.last { return nil }
            box.queued.append(.heartbeat)
            defer { box.waiter = nil }
            return box.waiter
        }
        waiter?.resume()
    }

    /// The client went away.
    public func cancel() {
        mailbox.withLock { $0.finished = true }
        wake()
        broadcast?.remove(id)
    }

    /// Wakes the writer when events wait for it.
    func wakeIfQueued() {
        mailbox.withLock { box -> CheckedContinuation<Void, Never>? in
            guard !box.queued.isEmpty, box.waiter != nil else { return nil }
            box.woken = .now
            defer { box.waiter = nil }
            return box.waiter
        }?.resume()
    }

    private func wake() {
        mailbox.withLock { box -> CheckedContinuation<Void, Never>? in
            defer { box.waiter = nil }
            return box.waiter
        }?.resume()
    }
}
