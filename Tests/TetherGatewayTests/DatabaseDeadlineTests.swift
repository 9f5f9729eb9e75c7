import Synchronization
import Testing
@testable import TetherGateway

/// `PostgresEventStore.abandoning`, the one bound on a database call: a statement that never
/// answers and ignores cancellation (as on a connection cut under it) must not hold its
/// caller past the limit, nor past a cancellation, and is itself cancelled when given up on.
@Suite struct DatabaseDeadlineTests {
    /// An operation that ends only when the test opens it, whatever cancellation says; it
    /// records that it was cancelled.
    final class Stuck: Sendable {
        private let held = Mutex<(waiting: CheckedContinuation<Void, Never>?, open: Bool)>((nil, false))
        let cancelled = Mutex(false)

        func run() async -> Int {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let openAlready = held.withLock { held in
                        if !held.open { held.waiting = continuation }
                        return held.open
                    }
                    if openAlready { continuation.resume() }
                }
            } onCancel: {
                cancelled.withLock { $0 = true }
            }
            return 7
        }

        func open() {
            held.withLock { held in
                held.open = true
                return held.waiting.take()
            }?.resume()
        }
    }

    @Test func anAnswerInTimeIsTheResult() async throws {
        let answer = try await PostgresEventStore.abandoning(after: .seconds(5), location: "db") { 42 }
        #expect(answer == 42)
    }

    @Test func aStatementThatNeverAnswersIsGivenUpOnAtTheLimitAndCancelled() async throws {
        let stuck = Stuck()
        defer { stuck.open() }
        let asked = ContinuousClock.now
        do {
            _ = try await PostgresEventStore.abandoning(after: .milliseconds(300), location: "db.example:5432") { await stuck.run() }
            Issue.record("a statement that never answered returned")
        } catch let error as DatabaseUnanswered {
            #expect(error.description.contains("db.example:5432"))
        }
        #expect(ContinuousClock.now - asked < .seconds(2))
        try await waitUntil { stuck.cancelled.withLock { $0 } }
        #expect(stuck.cancelled.withLock { $0 }, "the abandoned statement was not cancelled")
    }

    @Test func aCancelledCallerStopsWaitingAtOnce() async throws {
        let stuck = Stuck()
        defer { stuck.open() }
        let call = Task { try await PostgresEventStore.abandoning(after: .seconds(60), location: "db") { await stuck.run() } }
        try await Task.sleep(for: .milliseconds(100))
        let cancelledAt = ContinuousClock.now
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(ContinuousClock.now - cancelledAt < .seconds(2))
        try await waitUntil { stuck.cancelled.withLock { $0 } }
        #expect(stuck.cancelled.withLock { $0 })
    }

    /// A lease's unlock runs while its task is being cancelled (a shutdown): it is still given
    /// its time, and its answer.
    @Test func notHonouringCancellationTheCallerWaitsForTheAnswer() async throws {
        let stuck = Stuck()
        let call = Task {
            try await PostgresEventStore.abandoning(after: .seconds(60), location: "db", honouringCancellation: false) { await stuck.run() }
        }
        try await Task.sleep(for: .milliseconds(100))
        call.cancel()
        try await Task.sleep(for: .milliseconds(200))
        stuck.open()
        #expect(try await call.value == 7)
    }
}
