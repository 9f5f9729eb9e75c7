import Foundation
import Synchronization
import Testing
import TetherStreaming

/// Runs `body` on a thread of its own, as libcurl's transfer thread is: a producer that blocks
/// must never block one of the few threads Swift's cooperative pool has.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// The one bounded hand-off: batches in, everything ready out, producers held at the bound.
@Suite struct BatchChannelTests {
    @Test func whatWasSentMeanwhileComesOutAsOneBatchInOrder() async throws {
        let channel = BatchChannel<Int>(capacity: 100)
        try await channel.send(contentsOf: [1, 2])
        try await channel.send(3)
        try await channel.send(contentsOf: [4, 5, 6])
        #expect(try await channel.next() == [1, 2, 3, 4, 5, 6])
        channel.finish()
        #expect(try await channel.next() == nil)
    }

    @Test func aWaitingConsumerGetsTheNextBatchAsItComes() async throws {
        let channel = BatchChannel<String>(capacity: 4)
        async let received = channel.next()
        try await Task.sleep(for: .milliseconds(20))
        try await channel.send(contentsOf: ["a", "b"])
        #expect(try await received == ["a", "b"])
    }

    @Test func aProducerWaitsAtTheBoundUntilTheConsumerTakes() async throws {
        let channel = BatchChannel<Int>(capacity: 3)
        try await channel.send(contentsOf: [1, 2, 3])  // taken whole: there was room
        let sent = Atomic<Int>(0)
        let producer = Task {
            try await channel.send(4)
            sent.store(1, ordering: .relaxed)
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(sent.load(ordering: .relaxed) == 0)
        #expect(try await channel.next() == [1, 2, 3])
        try await producer.value
        #expect(sent.load(ordering: .relaxed) == 1)
        #expect(try await channel.next() == [4])
    }

    /// A fast producer and a slow consumer: nothing lost, nothing reordered, and no batch
    /// larger than the bound plus one batch.
    @Test(arguments: [1, 8, 256])
    func aFloodArrivesWholeAndBounded(capacity: Int) async throws {
        let channel = BatchChannel<Int>(capacity: capacity)
        let total = 50_000
        let producer = Task {
            var next = 0
            while next < total {
                let batch = Array(next..<min(next + 7, total))
                try await channel.send(contentsOf: batch)
                next += batch.count
            }
            channel.finish()
        }
        var expected = 0
        var largest = 0
        while let batch = try await channel.next() {
            largest = max(largest, batch.count)
            #expect(batch == Array(expected..<expected + batch.count))
            expected += batch.count
        }
        try await producer.value
        #expect(expected == total)
        #expect(largest <= capacity - 1 + 7)
    }

    @Test func aBlockedThreadProducerIsReleasedByTheConsumer() async throws {
        let channel = BatchChannel<Int>(capacity: 2)
        let producer = Task {
            await onThread {
                var accepted = 0
                for value in 0..<1000 where channel.sendBlocking(contentsOf: [value]) { accepted += 1 }
                channel.finish()
                return accepted
            }
        }
        var received: [Int] = []
        while let batch = try await channel.next() {
            #expect(batch.count <= 2)
            received += batch
        }
        #expect(await producer.value == 1000)
        #expect(received == Array(0..<1000))
    }

    @Test func theEndComesAfterWhatWasBufferedAndCarriesTheFailure() async throws {
        struct Broken: Error {}
        let channel = BatchChannel<Int>(capacity: 8)
        try await channel.send(contentsOf: [1, 2])
        channel.finish(throwing: Broken())
        #expect(try await channel.next() == [1, 2])
        await #expect(throws: Broken.self) { _ = try await channel.next() }
        await #expect(throws: CancellationError.self) { try await channel.send(3) }
    }

    @Test func cancellingWakesEveryoneAndLaterSendsFail() async throws {
        let channel = BatchChannel<Int>(capacity: 1)
        try await channel.send(1)
        let parkedTask = Task { try await channel.send(2) }
        let parkedThread = Task { await onThread { channel.sendBlocking(contentsOf: [3]) } }
        try await Task.sleep(for: .milliseconds(30))
        channel.cancel()
        await #expect(throws: CancellationError.self) { try await parkedTask.value }
        #expect(await parkedThread.value == false)
        await #expect(throws: CancellationError.self) { _ = try await channel.next() }
        #expect(channel.isCancelled)
    }

    @Test func aConsumerTaskThatIsCancelledCancelsTheChannel() async throws {
        let channel = BatchChannel<Int>(capacity: 4)
        let consumer = Task { try await channel.next() }
        try await Task.sleep(for: .milliseconds(20))
        consumer.cancel()
        await #expect(throws: CancellationError.self) { _ = try await consumer.value }
        await #expect(throws: CancellationError.self) { try await channel.send(1) }
    }
}
