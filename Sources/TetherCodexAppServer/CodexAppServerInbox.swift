import Synchronization

/// What one consumer (an event stream, an `approve` waiting for its request) receives from an
/// app-server connection: its messages in order, bounded in wire bytes. When it is full, `put`
/// waits until the consumer takes (so the connection's reader, and through the socket the
/// server, waits too) — unless waiting is not allowed then (a call's response must still be
/// read): what does not fit is dropped, and the consumer is told how many messages
/// (``Batch/incoming(_:lost:)``) and re-reads the threads it follows.
final class CodexAppServerInbox: Sendable {
    enum Batch: Sendable {
        /// What came since the last take, and how many messages were dropped before it.
        case incoming([CodexAppServerMessage], lost: Int)
        case timedOut
        /// The connection ended cleanly (a failed one throws its error).
        case ended
    }

    private struct State {
        var queue: [CodexAppServerMessage] = []
        var bytes = 0
        var lost = 0
        var ended = false
        var failure: (any Error)?
        var waiter: (token: Int, continuation: CheckedContinuation<Batch, any Error>)?
        var tokens = 0
        /// The reader, waiting for room.
        var roomWaiter: (token: Int, continuation: CheckedContinuation<Void, Never>)?

        mutating func take() -> Batch? {
            if !queue.isEmpty || lost > 0 {
                defer { (queue, bytes, lost) = ([], 0, 0) }
                return .incoming(queue, lost: lost)
            }
            return nil
        }
    }

    private let budget: Int
    private let state = Mutex(State())

    init(budget: Int = 1 << 20) {
        self.budget = budget
    }

    /// Queues `messages` (`bytes` long on the wire together). When they do not fit, waits for
    /// the consumer while `mayWait()` says so (asked again every `recheck`), else drops them.
    func put(_ messages: [CodexAppServerMessage], bytes: Int, mayWait: @Sendable () -> Bool = { false },
             recheck: Duration = .milliseconds(50)) async {
        while !tryPut(messages, bytes: bytes, mayWait: mayWait) {
            await waitForRoom(bytes: bytes, recheck: recheck)
        }
    }

    /// Queues or drops `messages`; false when they do not fit and may wait for room.
    private func tryPut(_ messages: [CodexAppServerMessage], bytes: Int, mayWait: () -> Bool) -> Bool {
        let handOff = state.withLock { state -> (placed: Bool, handOff: (CheckedContinuation<Batch, any Error>, Batch)?) in
            guard !state.ended else { return (true, nil) }
            if state.queue.isEmpty || state.bytes + bytes <= budget {
                if state.queue.isEmpty { state.queue = messages } else { state.queue += messages }
                state.bytes += bytes
            } else if mayWait() {
                return (false, nil)
            } else {
                state.lost += messages.count
            }
            guard let waiter = state.waiter, let batch = state.take() else { return (true, nil) }
            state.waiter = nil
            return (true, (waiter.continuation, batch))
        }
        if let (waiter, batch) = handOff.handOff { waiter.resume(returning: batch) }
        return handOff.placed
    }

    /// Returns once the consumer has taken (or after `recheck`, for the caller to ask again).
    private func waitForRoom(bytes: Int, recheck: Duration) async {
        let token = state.withLock { state -> Int in
            state.tokens += 1
            return state.tokens
        }
        await withCheckedContinuation { (room: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.ended || state.queue.isEmpty || state.bytes + bytes <= budget { return true }
                state.roomWaiter = (token, room)
                return false
            }
            if ready {
                room.resume()
                return
            }
            Task {
                try? await Task.sleep(for: recheck)
                self.wakeReader(token: token)
            }
        }
    }

    private func wakeReader(token: Int? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.roomWaiter, token == nil || waiter.token == token else { return nil }
            state.roomWaiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    func end(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Batch, any Error>? in
            guard !state.ended else { return nil }
            state.ended = true
            state.failure = error
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: .ended) }
        wakeReader()
    }

    /// The consumer is gone for good: nothing it would take waits any more.
    func cancel() { end(nil) }

    /// What has come since the last call, waiting up to `timeout` (nil: for ever) when nothing has.
    func next(timeout: Duration?) async throws -> Batch {
        let token = state.withLock { state -> Int in
            state.tokens += 1
            return state.tokens
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Batch, any Error>) in
                let ready: Result<Batch, any Error>? = state.withLock { state in
                    if let batch = state.take() { return .success(batch) }
                    if state.ended { return state.failure.map { .failure($0) } ?? .success(.ended) }
                    state.waiter = (token, continuation)
                    return nil
                }
                if let ready {
                    continuation.resume(with: ready)
                    self.wakeReader()  // what it took made room
                } else if let timeout {
                    Task {
                        try? await Task.sleep(for: timeout)
                        self.resume(token: token, with: .success(.timedOut))
                    }
                }
            }
        } onCancel: {
            self.resume(token: token, with: .failure(CancellationError()))
        }
    }

    private func resume(token: Int, with result: Result<Batch, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Batch, any Error>? in
            guard let waiter = state.waiter, waiter.token == token else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(with: result)
    }
}
