import Logging
import PostgresNIO
import Synchronization

/// Every call a request makes on the database is bounded: while PostgreSQL is down or does not
/// answer, the pool would hold a caller until a connection comes back; past `operationDeadline`
/// the call fails instead (`DatabaseUnanswered`), and its request with it. The long-lived uses —
/// a lease, the append notices, retention, the schema at start — wait as long as they must; only
/// the statements on a lease's own connection (its check, its unlock) are given up on in time
/// (`abandoning`).
extension PostgresEventStore {
    /// The pool's `withConnection`, bounded.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await bounded { try await self.client.withConnection(body) }
    }

    /// The pool's `withTransaction`, bounded.
    func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await bounded { try await self.client.withTransaction(logger: self.logger) { connection in try await body(connection) } }
    }

    /// One statement on a pooled connection, bounded.
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await bounded { try await self.client.query(query, logger: logger) }
    }

    private func bounded<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let deadline = operationDeadline
        let location = "\(location)"
        return try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: deadline)
                throw DatabaseUnanswered(location: location, deadline: deadline)
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }
}

extension PostgresEventStore {
    /// `operation`'s result, or `DatabaseUnanswered` once `limit` passes — and, while
    /// `honouringCancellation`, `CancellationError` once the task is cancelled — without waiting
    /// for `operation` to end. For statements on one held connection: on a connection that went
    /// away under it, a statement can wait for ever and does not heed cancellation, and a lease
    /// check or an unlock must not hold a shutdown behind it. An abandoned statement ends with
    /// its connection.
    static func abandoning(after limit: Duration, location: String, honouringCancellation: Bool = true,
                           _ operation: @escaping @Sendable () async throws -> Void) async throws {
        if honouringCancellation { try Task.checkCancellation() }
        let answer = FirstAnswer()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                answer.hold(continuation, timer: Task {
                    try? await Task.sleep(for: limit)
                    answer.end(.failure(DatabaseUnanswered(location: location, deadline: limit)))
                })
                if honouringCancellation, Task.isCancelled {
                    answer.end(.failure(CancellationError()))  // cancelled meanwhile: onCancel found nothing held
                    return
                }
                Task {
                    do { try await operation(); answer.end(.success(())) } catch { answer.end(.failure(error)) }
                }
            }
        } onCancel: {
            if honouringCancellation { answer.end(.failure(CancellationError())) }
        }
    }
}

/// The continuation of `abandoning`, resumed by whichever comes first (the answer, the time
/// limit, cancellation); later ones are dropped, and the timer is stopped.
private final class FirstAnswer: Sendable {
    private let held = Mutex<(continuation: CheckedContinuation<Void, any Error>, timer: Task<Void, Never>)?>(nil)

    func hold(_ continuation: CheckedContinuation<Void, any Error>, timer: Task<Void, Never>) {
        held.withLock { $0 = (continuation, timer) }
    }

    func end(_ result: Result<Void, any Error>) {
        guard let (continuation, timer) = held.withLock({ held in
            defer { held = nil }
            return held
        }) else { return }
        timer.cancel()
        continuation.resume(with: result)
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
