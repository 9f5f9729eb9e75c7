import Synchronization
import Testing
import TetherStreaming

/// A stream's decoding run ahead in its own task: everything in order, bounded, and stopped
/// with its consumer.
@Suite struct PipelineStageTests {
    struct Broken: Error, Equatable {}

    @Test func theConsumerGetsEverythingInOrderThenTheEnd() async throws {
        let received = try await withPipelineStage(capacity: 8, produce: { (channel: BatchChannel<Int>) in
            for start in stride(from: 0, to: 1000, by: 10) {
                try await channel.send(contentsOf: Array(start..<(start + 10)))
            }
        }, consume: { channel in
            var all: [Int] = []
            while let batch = try await channel.next() { all += batch }
            return all
        })
        #expect(received == Array(0..<1000))
    }

    @Test func aProducersFailureComesAfterWhatItHandedOver() async throws {
        let seen = Mutex<[Int]>([])
        await #expect(throws: Broken.self) {
            try await withPipelineStage(capacity: 100, produce: { (channel: BatchChannel<Int>) in
                try await channel.send(contentsOf: [1, 2, 3])
                throw Broken()
            }, consume: { channel in
                while let batch = try await channel.next() { seen.withLock { $0 += batch } }
            })
        }
        #expect(seen.withLock { $0 } == [1, 2, 3])
    }

    /// The producer never gets more than the bound (and one batch) ahead of a slow consumer.
    @Test func theProducerWaitsForTheConsumerAtTheBound() async throws {
        let produced = Atomic<Int>(0)
        let aheadAtMost = Mutex(0)
        try await withPipelineStage(capacity: 10, produce: { channel in
            for _ in 0..<200 {
                try await channel.send(contentsOf: [2], weight: 2)
                produced.add(2, ordering: .relaxed)
            }
        }, consume: { channel in
            var consumed = 0
            while let batch = try await channel.next() {
                consumed += batch.reduce(0, +)
                aheadAtMost.withLock { $0 = max($0, produced.load(ordering: .relaxed) - consumed) }
                try await Task.sleep(for: .milliseconds(1))
            }
        })
        let total = produced.load(ordering: .relaxed)
        #expect(total == 400)
        // At most `capacity - 1` waiting, plus one batch taken whole, plus the one being sent.
        #expect(aheadAtMost.withLock { $0 } <= 10 - 1 + 2 + 2)
    }

    /// A consumer that is done (`send --follow` saw its turn end) stops a producer that would
    /// otherwise read forever, and the stage returns only once it has stopped.
    @Test(.timeLimit(.minutes(1))) func aConsumerThatReturnsStopsTheProducer() async throws {
        let stopped = Atomic<Bool>(false)
        let first = try await withPipelineStage(capacity: 4, produce: { (channel: BatchChannel<Int>) in
            defer { stopped.store(true, ordering: .relaxed) }
            var next = 0
            while true {  // an endless source: only cancellation ends it
                try await channel.send(next)
                next += 1
            }
        }, consume: { channel in
            try await channel.next()?.first
        })
        #expect(first == 0)
        let producerStopped = stopped.load(ordering: .relaxed)
        #expect(producerStopped)
    }

    /// Likewise a producer parked in a read (not in a send) is cancelled.
    @Test(.timeLimit(.minutes(1))) func aConsumerThatFailsStopsAProducerWaitingToRead() async throws {
        let stopped = Atomic<Bool>(false)
        await #expect(throws: Broken.self) {
            try await withPipelineStage(capacity: 4, produce: { (channel: BatchChannel<Int>) in
                defer { stopped.store(true, ordering: .relaxed) }
                try await channel.send(1)
                try await Task.sleep(for: .seconds(3600))  // the network, silent
            }, consume: { channel in
                _ = try await channel.next()
                throw Broken()
            })
        }
        let producerStopped = stopped.load(ordering: .relaxed)
        #expect(producerStopped)
    }
}
