import NIOCore
import Synchronization

/// Where a live client's frames go: its connection, written from the connection's event loop
/// (no task, no hop per write).
public protocol LiveFrameSink: Sendable {
    var eventLoop: any EventLoop { get }
    /// False while the connection holds more unsent than its high-water mark (the client reads
    /// slower than it is written to).
    var isWritable: Bool { get }
    /// Writes `frames` and flushes them; called on `eventLoop`.
    func write(_ frames: [ByteBuffer])
    /// Runs `action` once the connection closed.
    func whenClosed(_ action: @escaping @Sendable () -> Void)
}

/// The live clients whose connections live on one event loop. A client with events queued is
/// marked ready; one pass on the loop writes every ready client's events, each client's in one
/// write. Passes are at least the broadcast's write gap apart, so with many clients a pass
/// carries what came meanwhile: one timer per loop, however many clients it serves.
final class LoopFanOut: Sendable {
    let loop: any EventLoop

    private struct State {
        var ready: [EventSubscription] = []
        var passScheduled = false
        var lastPass: ContinuousClock.Instant?
        /// The gap the broadcast gave last (a heartbeat or a retry uses it).
        var gap: Duration = .zero
    }
    private let state = Mutex(State())

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Queues `client` for the next pass (the client marks itself, so it is queued once), which
    /// runs at once when the last pass was `gap` or more ago, else `gap` after it (nil: the gap
    /// given last).
    func ready(_ client: EventSubscription, gap given: Duration?) {
        let delay = state.withLock { state -> Duration? in
            if let given { state.gap = given }
            let gap = state.gap
            state.ready.append(client)
            guard !state.passScheduled else { return nil }
            state.passScheduled = true
            let now = ContinuousClock.now
            let sinceLast = state.lastPass.map { now - $0 } ?? gap
            return max(gap - sinceLast, .zero)
        }
        guard let delay else { return }
        if delay == .zero {
            loop.execute { self.pass() }
        } else {
            let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
            loop.scheduleTask(in: .nanoseconds(nanoseconds)) { self.pass() }
        }
    }

    /// Writes every ready client's events; on the loop.
    private func pass() {
        let clients = state.withLock { state in
            state.passScheduled = false
            state.lastPass = .now
            defer { state.ready.removeAll(keepingCapacity: true) }
            return state.ready
        }
        for client in clients { client.writeQueued() }
    }
}
