import Logging
import PostgresNIO
import Synchronization

/// Every call a request makes on the database is bounded: while PostgreSQL is down or does not
/// answer, the pool would hold a caller until a connection comes back; past `operationDeadline`
/// the call fails instead (`DatabaseUnanswered`), and its request with it. The long-lived uses —
/// a lease, the append notices, retention, the schema at start — wait as long as they must; only
/// the statements on a lease's own connection (its check, its unlock) are given up on in time.
/// Both kinds of bound are `abandoning`.
extension PostgresEventStore {
    /// The pool's `withConnection`, bounded.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await bounded { try await self.client.withConnection(body) }
    }

    /// The pool's `withTransaction`, bounded. A transaction given up on must not commit later,
    /// behind its caller's back and after the caller's next one (the log's order): its
    /// connection is closed, and the server rolls it back (a COMMIT already sent may still
    /// land, before anything that waits on its locks).
    func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let running = RunningTransaction()
        do {
            return try await bounded {
                defer { running.ended() }
                return try await self.client.withTransaction(logger: self.logger) { connection in
                    // Given up on while it began: it rolls back rather than run.
                    guard running.began(on: connection) else { throw CancellationError() }
                    return try await body(connection)
                }
            }
        } catch {
            if let connection = running.givenUp() { try? await connection.close() }
            throw error
        }
    }

    /// One statement on a pooled connection, bounded.
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await bounded { try await self.client.query(query, logger: logger) }
    }

    private func bounded<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Self.abandoning(after: operationDeadline, location: "\(location)", operation)
    }
}

extension PostgresEventStore {
    /// `operation`'s result, or `DatabaseUnanswered` once `limit` passes — and, while
    /// `honouringCancellation`, `CancellationError` once the task is cancelled — without waiting
    /// for `operation` to end: a statement on a connection that went away under it can wait for
    /// ever without heeding cancellation, and neither a request nor a shutdown may wait behind it.
    /// An operation given up on is cancelled (a caller queued for a pooled connection leaves the
    /// queue); one that ignores that ends with its connection.
    static func abandoning<T: Sendable>(after limit: Duration, location: String, honouringCancellation: Bool = true,
                                        _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        if honouringCancellation { try Task.checkCancellation() }
        let answer = FirstAnswer<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                answer.hold(continuation)
                answer.watch(Task {
                    try? await Task.sleep(for: limit)
                    answer.end(.failure(DatabaseUnanswered(location: location, deadline: limit)))
                })
                if honouringCancellation, Task.isCancelled {
                    answer.end(.failure(CancellationError()))  // cancelled meanwhile: onCancel found nothing held
                    return
                }
                answer.watch(Task {
                    do { answer.end(.success(try await operation())) } catch { answer.end(.failure(error)) }
                })
            }
        } onCancel: {
            if honouringCancellation { answer.end(.failure(CancellationError())) }
        }
    }
}

/// The continuation of `abandoning`, resumed by whichever comes first (the answer, the time
/// limit, cancellation); later ones are dropped, and the tasks still running (the timer, an
/// operation given up on) are cancelled.
private final class FirstAnswer<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var running: [Task<Void, Never>] = []
        var ended = false
    }
    private let state = Mutex(State())

    func hold(_ continuation: CheckedContinuation<T, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// A task to cancel once the answer is in (at once, if it already is).
    func watch(_ task: Task<Void, Never>) {
        let ended = state.withLock { state in
            if !state.ended { state.running.append(task) }
            return state.ended
        }
        if ended { task.cancel() }
    }

    func end(_ result: Result<T, any Error>) {
        // Nothing is held before `hold`: an end that early (cancellation on entry) is dropped,
        // and `abandoning` checks for cancellation again once the continuation is held.
        let taken = state.withLock { state -> (CheckedContinuation<T, any Error>, [Task<Void, Never>])? in
            guard !state.ended, let continuation = state.continuation else { return nil }
            defer { state = State(ended: true) }
            return (continuation, state.running)
        }
        guard let (continuation, running) = taken else { return }
        continuation.resume(with: result)
        for task in running { task.cancel() }
    }
}

/// The connection a bounded transaction runs on, while it runs: whoever comes first — the
/// transaction ending, or its caller giving up on it — takes it, so a connection back in the
/// pool (and perhaps lent again) is never closed.
private final class RunningTransaction: Sendable {
    private let connection = Mutex<(held: PostgresConnection?, done: Bool)>((nil, false))

    /// False when the caller gave up on the transaction already.
    func began(on connection: PostgresConnection) -> Bool {
        self.connection.withLock { state in
            if !state.done { state.held = connection }
            return !state.done
        }
    }

    func ended() {
        connection.withLock { $0 = (nil, true) }
    }

    /// The connection of a transaction still running, once: it is the caller's to close.
    func givenUp() -> PostgresConnection? {
        connection.withLock { state in
            defer { state = (nil, true) }
            return state.held
        }
    }
}

/// A database call that got no answer in time: the server is down, unreachable or overloaded.
struct DatabaseUnanswered: Error, CustomStringConvertible {
    let location: String
    let deadline: Duration
    var description: String {
        "the event log's database (\(location)) did not answer within \(deadline.components.seconds) s; check that PostgreSQL is running and reachable from this gateway"
    }
}
