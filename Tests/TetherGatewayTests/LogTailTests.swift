import Foundation
import Synchronization
import Logging
import Testing
import TetherCore
@testable import TetherGateway

/// The shared log's publisher, as a replica's appenders and its shutdown see it.
@Suite struct LogTailTests {
    /// An appender waits for its events' publication; when its task is cancelled (a replica
    /// shutting down while its database is gone, so no read ever publishes them) the wait ends.
    @Test func aWaitForPublicationEndsWhenItsTaskIsCancelled() async throws {
        let tail = try await Self.startedTail()
        let ended = Mutex(false)
        let waiting = Task {
            await tail.published(through: 5)  // never appended: only cancellation ends this
            ended.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!ended.withLock { $0 }, "the wait ended before anything published seq 5")
        waiting.cancel()
        try await waitUntil { ended.withLock { $0 } }
        #expect(ended.withLock { $0 }, "a cancelled wait for publication still waits")
    }

    /// Cancelled before it starts waiting, it does not wait at all.
    @Test func aWaitAlreadyCancelledReturnsAtOnce() async throws {
        let tail = try await Self.startedTail()
        let ended = Mutex(false)
        let waiting = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await tail.published(through: 5)
            ended.withLock { $0 = true }
        }
        try await waitUntil { ended.withLock { $0 } }
        #expect(ended.withLock { $0 })
        _ = waiting
    }

    /// A tail over a fresh, empty log, started; its own reads are a minute apart, so only an
    /// append or a cancellation could end a wait within a test.
    private static func startedTail() async throws -> LogTail {
        let log = try EventLog(path: EventLogTests.temporaryPath(), logger: Logger(label: "test"))
        let tail = LogTail(log: log, broadcast: EventBroadcast(), pollInterval: .seconds(60))
        try await tail.start()
        return tail
    }
}
