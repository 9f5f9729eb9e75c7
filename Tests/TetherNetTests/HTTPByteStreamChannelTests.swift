import Testing
@testable import TetherNet

/// The hand-off queue between libcurl's transfer thread and a stream's consumer.
struct HTTPByteStreamChannelTests {
    /// A consumer that is always a little behind never empties the queue. The chunks it has
    /// already taken must be let go of anyway, or memory grows with the length of the stream (it
    /// did: `tether sse` reached 117 MB over 800,000 frames, every chunk held until the end).
    @Test func aConsumerThatNeverCatchesUpDoesNotHoldConsumedChunks() async throws {
        let capacity = 4
        let channel = HTTPByteStream.Channel(capacity: capacity)
        func deliver(_ index: Int) {
            var chunk = [UInt8](repeating: 0x61, count: 1024)
            chunk[0] = UInt8(truncatingIfNeeded: index)
            chunk.withUnsafeBytes { channel.received($0) }
        }
        // Fill every slot, then: take one, one more arrives, and so on; the queue is never empty.
        for index in 0..<capacity { deliver(index) }
        var mostStored = 0
        var inOrder = true
        for index in 0..<1000 {
            let chunk = try await channel.next()
            if chunk?.first != UInt8(truncatingIfNeeded: index) || chunk?.count != 1024 { inOrder = false }
            deliver(index + capacity)
            mostStored = max(mostStored, channel.storedChunkCount)
        }
        #expect(inOrder)
        #expect(mostStored <= 2 * capacity)
    }
}
