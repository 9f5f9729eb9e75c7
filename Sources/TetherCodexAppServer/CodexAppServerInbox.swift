import Synchronization
import TetherCore

/// What one consumer (an event stream, an `approve` waiting for its request) receives from an
/// app-server connection: its messages in order, bounded in bytes. A consumer that falls behind
/// loses what overflows and is told how much (``Batch/incoming(_:lost:)``), so it re-reads the
/// threads it follows instead of holding memory for a peer it cannot keep up with.
final class CodexAppServerInbox: Sendable {
    enum Batch: Sendable {
        /// What came since the last take, and how many messages were dropped before it.
        case incoming([JSONValue], lost: Int)
        case timedOut
        /// The connection ended cleanly (a failed one throws its error).
        case ended
    }

    private struct State {
        var queue: [JSONValue] = []
        var bytes = 0
        var lost = 0
        var ended = false
        var failure: (any Error)?
        var waiter: (token: Int, continuation: CheckedContinuation<Batch, any Error>)?
        var tokens = 0

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

    init(budget: Int = 8 << 20) {
        self.budget = budget
    }

    func put(_ message: JSONValue, bytes: Int) {
        let handOff = state.withLock { state -> (CheckedContinuation<Batch, any Error>, Batch)? in
            guard !state.ended else { return nil }
            if state.bytes + bytes > budget {
                state.lost += 1
            } else {
                state.queue.append(message)
                state.bytes += bytes
            }
            guard let waiter = state.waiter, let batch = state.take() else { return nil }
            state.waiter = nil
            return (waiter.continuation, batch)
        }
        handOff?.0.resume(returning: handOff!.1)
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
    }

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
