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

    // MARK: trySend: a producer that must not block

    @Test func trySendTakesWhatFitsAndSaysFullWithoutTakingOrBlocking() async throws {
        let channel = BatchChannel<Int>(capacity: 2)
        let called = Atomic<Int>(0)
        let onRoom: @Sendable () -> Void = { called.add(1, ordering: .relaxed) }
        #expect(channel.trySend(contentsOf: [1, 2], onRoom: onRoom) == .accepted)
        #expect(channel.trySend(contentsOf: [3], onRoom: onRoom) == .full)
        #expect(channel.trySend(contentsOf: [], onRoom: onRoom) == .accepted)
        #expect(called.load(ordering: .relaxed) == 0)
        // Nothing of the refused batch got in; the consumer's take calls the producer back, once.
        #expect(try await channel.next() == [1, 2])
        #expect(called.load(ordering: .relaxed) == 1)
        #expect(channel.trySend(contentsOf: [3], onRoom: onRoom) == .accepted)
        #expect(try await channel.next() == [3])
        #expect(called.load(ordering: .relaxed) == 1)  // an accepted offer keeps no callback
        // A consumer already waiting is handed the batch at once.
        async let waiting = channel.next()
        try await Task.sleep(for: .milliseconds(20))
        #expect(channel.trySend(contentsOf: [4, 5, 6], onRoom: onRoom) == .accepted)
        #expect(try await waiting == [4, 5, 6])
    }

    /// The race of the old two-step hand-off, made deterministic: the producer sees `.full`, the
    /// consumer drains before the producer gets to wait — the producer must still be woken,
    /// because its callback was registered in the same step that found the channel full.
    @Test func aDrainBetweenFullAndWaitingStillWakesTheProducer() async throws {
        let channel = BatchChannel<Int>(capacity: 1)
        #expect(channel.trySend(contentsOf: [1], onRoom: {}) == .accepted)
        let room = DispatchSemaphore(value: 0)
        #expect(channel.trySend(contentsOf: [2], onRoom: { room.signal() }) == .full)
        #expect(try await channel.next() == [1])  // the consumer drains first...
        #expect(room.wait(timeout: .now()) == .success)  // ...and the producer, waiting only now, goes on
        #expect(channel.trySend(contentsOf: [2], onRoom: {}) == .accepted)
        #expect(try await channel.next() == [2])
    }

    /// The same race under load: a thread producer that waits for its callback after every
    /// `.full`, against a consumer that drains as fast as it can. A lost wake-up is a producer
    /// that waits forever; here it fails the test instead.
    @Test func aThreadProducerOnTrySendIsNeverLeftWaiting() async throws {
        let channel = BatchChannel<Int>(capacity: 1)
        let total = 20_000
        let producer = Task {
            await onThread { () -> Int in
                var fulls = 0
                for value in 0..<total {
                    while true {
                        let room = DispatchSemaphore(value: 0)
                        switch channel.trySend(contentsOf: [value], onRoom: { room.signal() }) {
                        case .accepted: break
                        case .closed: return -1
                        case .full:
                            fulls += 1
                            guard room.wait(timeout: .now() + 5) == .success else { return -2 }  // lost wake-up
                            continue
                        }
                        break
                    }
                }
                channel.finish()
                return fulls
            }
        }
        var received: [Int] = []
        while let batch = try await channel.next() {
            #expect(batch.count <= 1)
            received += batch
        }
        let fulls = await producer.value
        #expect(fulls >= 0, "the producer was never woken (-2) or the channel closed (-1)")
        #expect(received == Array(0..<total))
    }

    @Test func finishingOrCancellingCallsAWaitingProducerBackAndLaterOffersAreClosed() async throws {
        for cancel in [false, true] {
            let channel = BatchChannel<Int>(capacity: 1)
            let called = Atomic<Int>(0)
            #expect(channel.trySend(contentsOf: [1], onRoom: {}) == .accepted)
            #expect(channel.trySend(contentsOf: [2], onRoom: { called.add(1, ordering: .relaxed) }) == .full)
            if cancel { channel.cancel() } else { channel.finish() }
            #expect(called.load(ordering: .relaxed) == 1)
            #expect(channel.trySend(contentsOf: [2], onRoom: { called.add(1, ordering: .relaxed) }) == .closed)
            #expect(called.load(ordering: .relaxed) == 1)
            if !cancel {
                #expect(try await channel.next() == [1])  // what was buffered still comes, then the end
                #expect(try await channel.next() == nil)
            }
        }
    }

    // MARK: Weight, room, and a consumer that comes back

    @Test func aWeighedChannelIsBoundedByWeightNotCount() async throws {
        let channel = BatchChannel<[UInt8]>(capacity: 100)
        #expect(channel.trySend(contentsOf: [[UInt8](repeating: 1, count: 60)], weight: 60, onRoom: {}) == .accepted)
        #expect(channel.bufferedWeight == 60)
        // Under the bound: a whole batch is taken, even past it.
        #expect(channel.trySend(contentsOf: [[UInt8](repeating: 2, count: 30), [UInt8](repeating: 3, count: 30)], weight: 60,
                                onRoom: {}) == .accepted)
        #expect(channel.bufferedWeight == 120)
        #expect(channel.trySend(contentsOf: [[7]], weight: 1, onRoom: {}) == .full)  // one byte is too much now
        #expect(try await channel.next()?.map(\.count) == [60, 30, 30])
        #expect(channel.bufferedWeight == 0)
    }

    @Test func hasRoomRegistersTheCallbackOnlyWhenFull() async throws {
        let channel = BatchChannel<Int>(capacity: 2)
        let called = Atomic<Int>(0)
        let onRoom: @Sendable () -> Void = { called.add(1, ordering: .relaxed) }
        #expect(channel.hasRoom(orCall: onRoom))
        #expect(channel.trySend(contentsOf: [1, 2], onRoom: {}) == .accepted)
        #expect(!channel.hasRoom(orCall: onRoom))
        #expect(called.load(ordering: .relaxed) == 0)
        #expect(try await channel.next() == [1, 2])
        #expect(called.load(ordering: .relaxed) == 1)
        #expect(channel.hasRoom(orCall: onRoom))
        channel.finish()
        #expect(channel.hasRoom(orCall: onRoom))  // closed: an offer would say so at once
        #expect(called.load(ordering: .relaxed) == 1)
    }

    @Test func aConsumerWaitEndedByCancellationLeavesTheChannelOpen() async throws {
        let channel = BatchChannel<Int>(capacity: 4)
        let waiting = Task { try await channel.next(cancellation: .endsWaitOnly) }
        try await Task.sleep(for: .milliseconds(30))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        #expect(!channel.isCancelled)
        try await channel.send(contentsOf: [1, 2])
        #expect(try await channel.next(cancellation: .endsWaitOnly) == [1, 2])
        // A task cancelled before it waits does not wait, and takes nothing.
        try await channel.send(3)
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await channel.next(cancellation: .endsWaitOnly)
        }
        // What is buffered is still handed over: cancellation only ends a wait.
        #expect(try await early.value == [3])
        let empty = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await channel.next(cancellation: .endsWaitOnly)
        }
        await #expect(throws: CancellationError.self) { _ = try await empty.value }
        channel.finish()
        #expect(try await channel.next() == nil)
    }
}
