import Testing
import TetherStreaming

/// The one stream pump: batches fed in order, handed on after each, and stopped by the machine.
@Suite struct StreamPumpTests {
    @Test func everyElementGoesInOrderWithAHandOverAfterEachBatch() async throws {
        var batches: [[Int]] = [[1, 2], [3], [4, 5, 6]]
        var log: [String] = []
        let done = try await pumpStream(batches: { batches.isEmpty ? nil : batches.removeFirst() }, leaving: 0,
                                        isDone: { false }, feed: { log.append("\($0)") }, endOfBatch: { log.append("|") })
        #expect(!done)
        #expect(log == ["1", "2", "|", "3", "|", "4", "5", "6", "|"])
    }

    @Test func aDoneMachineStopsTheBatchAndTheStream() async throws {
        var fed: [Int] = []
        var handOvers = 0
        var asked = 0
        let done = try await pumpStream(batches: {
            asked += 1
            return [1, 2, 3, 4]
        }, leaving: 0, isDone: { fed.count == 2 }, feed: { fed.append($0) }, endOfBatch: { handOvers += 1 })
        #expect(done)
        #expect(fed == [1, 2])
        #expect(handOvers == 1)  // what the batch produced still goes out
        #expect(asked == 1)
    }

    @Test func decodingAheadFeedsWhatTheProducerSent() async throws {
        var fed: [Int] = []
        let done = try await pumpStream(decodingAhead: 4, produce: { (channel: BatchChannel<Int>) in
            for start in stride(from: 0, to: 100, by: 10) {
                try await channel.send(contentsOf: Array(start..<(start + 10)))
            }
        }, leaving: -1, isDone: { false }, feed: { fed.append($0) }, endOfBatch: {})
        #expect(!done)
        #expect(fed == Array(0..<100))
    }
}
