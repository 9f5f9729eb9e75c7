import Logging
import PostgresNIO
import Synchronization
import Testing
@testable import TetherGateway

/// `PostgresEventStore.abandoning`, the one bound on a database call: a statement that never
/// answers and ignores cancellation (as on a connection cut under it) must not hold its
/// caller past the limit, nor past a cancellation, and is itself cancelled when given up on.
@Suite(.timeLimit(.minutes(1))) struct DatabaseDeadlineTests {
    /// An operation that ends only when the test opens it, whatever cancellation says; it
    /// records that it was cancelled.
    final class Stuck: Sendable {
        private let held = Mutex<(waiting: CheckedContinuation<Void, Never>?, open: Bool)>((nil, false))
        let started = Mutex(false)
        let cancelled = Mutex(false)

        func run() async -> Int {
            started.withLock { $0 = true }
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
        try await waitUntil { stuck.started.withLock { $0 } }
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
        try await waitUntil { stuck.started.withLock { $0 } }
        call.cancel()
        try await Task.sleep(for: .milliseconds(200))
        stuck.open()
        #expect(try await call.value == 7)
        #expect(!stuck.cancelled.withLock { $0 })
    }

    /// A transaction given up on does not commit later, behind its caller's back: its
    /// connection is closed, and the server rolls it back.
    @Test func aTransactionGivenUpOnDoesNotCommitLater() async throws {
        let logger = Logger(label: "test")
        let place = try StorePlace.fresh(.postgres)
        let store = try await PostgresEventStore.open(try PostgresLocation(place.location), logger: logger,
                                                      operationDeadline: .seconds(1))
        defer { store.close() }
        try await store.query("CREATE TABLE deadline_probe (n integer)", logger: logger)
        let asked = ContinuousClock.now
        await #expect(throws: DatabaseUnanswered.self) {
            try await store.withTransaction { connection in
                _ = try await connection.query("INSERT INTO deadline_probe VALUES (1)", logger: logger)
                _ = try await connection.query("SELECT pg_sleep(3)", logger: logger)
            }
        }
        #expect(ContinuousClock.now - asked < .milliseconds(2500))
        try await Task.sleep(for: .seconds(3))  // past the sleep: a transaction left running commits by now
        var count: Int?
        for try await n in try await store.query("SELECT count(*) FROM deadline_probe", logger: logger).decode(Int.self) { count = n }
        #expect(count == 0)
    }
}
