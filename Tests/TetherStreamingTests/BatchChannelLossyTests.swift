import Synchronization
import Testing
import TetherStreaming

/// The channel as a connection's inbox: waits with a time limit, and a producer that may not
/// always wait (a call's response is still to be read behind what fills the channel).
@Suite struct BatchChannelLossyTests {
    /// Whether a call waits, as the producer's owner knows it.
    final class CallWaiting: Sendable {
        private let value = Atomic<Bool>(false)
        var now: Bool { value.load(ordering: .relaxed) }
        func set(_ waiting: Bool) { value.store(waiting, ordering: .relaxed) }
    }

    @Test func aTimedWaitTimesOutAndLosesNothingLater() async throws {
        let channel = BatchChannel<Int>(capacity: 10)
        guard case .timedOut = try await channel.next(timeout: .milliseconds(20)) else {
            Issue.record("an empty channel handed something over")
            return
        }
        guard case .timedOut = try await channel.next(timeout: .zero) else {
            Issue.record("a zero timeout waited")
            return
        }
        try await channel.send(contentsOf: [1, 2])
        guard case .batch(let batch, let lost) = try await channel.next(timeout: .seconds(5)) else {
            Issue.record("what was sent after a timed-out wait did not come")
            return
        }
        #expect(batch == [1, 2])
        #expect(lost == 0)
        channel.finish()
        guard case .ended = try await channel.next(timeout: .seconds(5)) else {
            Issue.record("the end did not come")
            return
        }
    }

    @Test func aTimedWaitGetsWhatComesWithinIt() async throws {
        let channel = BatchChannel<Int>(capacity: 10)
        async let received = channel.next(timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(20))
        try await channel.send(contentsOf: [7])
        guard case .batch([7], 0) = try await received else {
            Issue.record("the waiting consumer did not get the batch")
            return
        }
    }

    @Test func aCancelledTimedWaitLeavesTheChannelOpen() async throws {
        let channel = BatchChannel<Int>(capacity: 10)
        let waiter = Task { try await channel.next(timeout: nil) }
        try await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        try await channel.send(contentsOf: [1])  // not cancelled: still taken
        guard case .batch([1], 0) = try await channel.next(timeout: .seconds(5)) else {
            Issue.record("the channel did not survive a cancelled wait")
            return
        }
    }

    @Test func whileItMayWaitALossyProducerWaitsForRoom() async throws {
        let channel = BatchChannel<Int>(capacity: 2)
        try await channel.send(contentsOf: [1, 2], mayWait: { true })
        let sent = Atomic<Int>(0)
        let producer = Task {
            try await channel.send(contentsOf: [3], mayWait: { true })
            sent.store(1, ordering: .relaxed)
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(sent.load(ordering: .relaxed) == 0)
        guard case .batch([1, 2], 0) = try await channel.next(timeout: nil) else {
            Issue.record("the first batch did not come whole")
            return
        }
        try await producer.value
        guard case .batch([3], 0) = try await channel.next(timeout: nil) else {
            Issue.record("the waiting producer's batch was lost")
            return
        }
    }

    @Test func whileItMayNotWaitItOverfillsThenDropsEverythingUntilTheConsumerTakes() async throws {
        let channel = BatchChannel<Int>(capacity: 2)
        #expect(try await channel.send(contentsOf: [1, 2], mayWait: { false }, overfill: 4) == .accepted)
        #expect(try await channel.send(contentsOf: [3], mayWait: { false }, overfill: 4) == .accepted)  // past the capacity
        #expect(try await channel.send(contentsOf: [4, 5], mayWait: { false }, overfill: 4) == .accepted)  // 3 < 4: taken whole
        #expect(try await channel.send(contentsOf: [6, 7], mayWait: { false }, overfill: 4) == .dropped)
        #expect(channel.bufferedWeight == 5)
        // Room again by the weight, but something was dropped: dropped too, so what is lost
        // came after everything the consumer receives.
        #expect(try await channel.send(contentsOf: [8], mayWait: { false }, overfill: 100) == .dropped)
        guard case .batch(let batch, let lost) = try await channel.next(timeout: .zero) else {
            Issue.record("nothing was handed over")
            return
        }
        #expect(batch == [1, 2, 3, 4, 5])
        #expect(lost == 3)
        #expect(try await channel.send(contentsOf: [9], mayWait: { false }) == .accepted)
        guard case .batch([9], 0) = try await channel.next(timeout: .zero) else {
            Issue.record("the count of lost elements was not reset by the take")
            return
        }
    }

    /// After a drop, a producer that may wait again waits until the consumer has been told of
    /// the loss, instead of dropping on: what it sends then comes after the loss.
    @Test func afterADropAProducerThatMayWaitWaitsUntilTheLossIsTold() async throws {
        let channel = BatchChannel<Int>(capacity: 2)
        try await channel.send(contentsOf: [1, 2], mayWait: { false })
        #expect(try await channel.send(contentsOf: [3], mayWait: { false }) == .dropped)
        let later = Task { try await channel.send(contentsOf: [4], mayWait: { true }) }
        try await Task.sleep(for: .milliseconds(50))
        guard case .batch([1, 2], 1) = try await channel.next(timeout: .zero) else {
            Issue.record("the loss was not told with what came before it")
            return
        }
        #expect(try await later.value == .accepted)
        guard case .batch([4], 0) = try await channel.next(timeout: .seconds(5)) else {
            Issue.record("what came after the loss did not follow it")
            return
        }
    }

    /// A consumer working through a backlog takes it a part at a time: whole batches, oldest
    /// first, up to the weight asked for (one at least); what was lost comes with the last
    /// part; producers wait until the channel is back under its bound.
    @Test func aTakeBoundedByWeightLeavesTheRestInOrder() async throws {
        let channel = BatchChannel<Int>(capacity: 10)
        for start in stride(from: 0, to: 30, by: 5) {  // six batches of weight 5: 30, overfilled
            try await channel.send(contentsOf: Array(start..<(start + 5)), weight: 5, mayWait: { false }, overfill: 30)
        }
        #expect(try await channel.send(contentsOf: [99], mayWait: { false }, overfill: 30) == .dropped)
        var parts: [[Int]] = []
        var lost: [Int] = []
        while case .batch(let part, let dropped) = try await channel.next(timeout: .zero, weighingAtMost: 12) {
            parts.append(part)
            lost.append(dropped)
        }
        #expect(parts == [Array(0..<10), Array(10..<20), Array(20..<30)])
        #expect(lost == [0, 0, 1])
        // A batch heavier than the limit still comes, whole.
        try await channel.send(contentsOf: [1, 2, 3], weight: 50)
        try await channel.send(contentsOf: [4], weight: 1, mayWait: { false }, overfill: 100)  // full: it must not wait
        guard case .batch([1, 2, 3], 0) = try await channel.next(timeout: .zero, weighingAtMost: 12) else {
            Issue.record("a heavy batch was split or held")
            return
        }
        guard case .batch([4], 0) = try await channel.next(timeout: .zero, weighingAtMost: 12) else {
            Issue.record("the rest was lost")
            return
        }
    }

    /// The race the rouse exists for: the producer parks because no call waits; a call starts
    /// and the consumer will not take until it is answered. The rouse makes the producer drop.
    @Test func aRouseMakesAParkedProducerAskAgain() async throws {
        let channel = BatchChannel<Int>(capacity: 1)
        let call = CallWaiting()
        try await channel.send(contentsOf: [1], mayWait: { !call.now })
        let outcome = Mutex<BatchChannel<Int>.LossySendOutcome?>(nil)
        let producer = Task {
            let sent = try await channel.send(contentsOf: [2], mayWait: { !call.now })
            outcome.withLock { $0 = sent }
        }
        try await waitUntilParked(channel)
        call.set(true)
        channel.rouseProducers()
        // Polled, not awaited: a rouse that does not wake the producer fails here, not hangs.
        let deadline = ContinuousClock.now + .seconds(5)
        while outcome.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(outcome.withLock { $0 } == .dropped, "the parked producer was not roused")
        _ = producer
        guard case .batch([1], 1) = try await channel.next(timeout: .zero) else {
            Issue.record("the dropped element was not counted")
            return
        }
    }

    /// Many rounds of a producer that is told, at random moments, that it may no longer wait,
    /// against a consumer that takes slowly: never stuck, and every element either received
    /// in order or counted lost.
    @Test func everyElementIsReceivedInOrderOrCountedLost() async throws {
        let channel = BatchChannel<Int>(capacity: 16)
        let call = CallWaiting()
        let total = 20_000
        let producer = Task {
            for start in stride(from: 0, to: total, by: 5) {
                if start % 400 == 0 { call.set(!call.now); channel.rouseProducers() }
                try await channel.send(contentsOf: Array(start..<(start + 5)), mayWait: { !call.now }, overfill: 32)
            }
            channel.finish()
        }
        var received: [Int] = []
        var lost = 0
        loop: while true {
            switch try await channel.next(timeout: .seconds(10)) {
            case .batch(let batch, let dropped):
                received += batch
                lost += dropped
                if received.count % 3 == 0 { await Task.yield() }
            case .ended: break loop
            case .timedOut:
                Issue.record("the producer got stuck")
                break loop
            }
        }
        try await producer.value
        #expect(received.count + lost == total)
        #expect(received == received.sorted())
        #expect(Set(received).count == received.count)
    }
}

/// Returns once a producer is parked on `channel` (fails after 5 s): a rouse test must wake a
/// parked producer, not one still on its way to park (which asks `mayWait` again anyway).
func waitUntilParked<Element: Sendable>(_ channel: BatchChannel<Element>, count: Int = 1) async throws {
    let deadline = ContinuousClock.now + .seconds(5)
    while channel.parkedProducers < count {
        guard ContinuousClock.now < deadline else {
            Issue.record("no producer parked within 5 s")
            return
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}
