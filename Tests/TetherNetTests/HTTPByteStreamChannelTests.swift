import Foundation
import Testing
@testable import TetherNet

/// The hand-off between libcurl's transfer thread and a stream's consumer.
struct HTTPByteStreamChannelTests {
    func chunk(_ index: Int) -> [UInt8] {
        var chunk = [UInt8](repeating: 0x61, count: 1024)
        chunk[0] = UInt8(truncatingIfNeeded: index)
        return chunk
    }

    /// Chunks that arrived while the consumer was busy come over together, in order; a
    /// consumer that is always a little behind never holds more than the channel's bound, and
    /// never the chunks it already took.
    @Test func chunksComeOverInBatchesInOrderAndBounded() async throws {
        let capacity = 4
        let channel = HTTPByteStream.Channel(capacity: capacity)
        for index in 0..<3 { chunk(index).withUnsafeBytes { channel.received($0) } }
        let first = try #require(try await channel.next())
        #expect(first.map { $0[0] } == [0, 1, 2])

        // A producer thread 1,000 chunks ahead: it blocks whenever `capacity` chunks wait.
        // On a thread of its own, as libcurl's is: a blocked producer must not hold a pool thread.
        let producer = Thread {
            for index in 3..<1003 { self.chunk(index).withUnsafeBytes { channel.received($0) } }
            channel.finished(nil)
        }
        producer.start()
        var next = 3
        var largest = 0
        while let batch = try await channel.next() {
            largest = max(largest, batch.count)
            for chunk in batch {
                #expect(chunk[0] == UInt8(truncatingIfNeeded: next) && chunk.count == 1024)
                next += 1
            }
        }
        #expect(next == 1003)
        #expect(largest <= capacity)
    }

    @Test func aConsumerThatGoesAwayStopsTheProducer() async throws {
        let channel = HTTPByteStream.Channel(capacity: 1)
        let control = CurlTransfer.Control()
        channel.control = control
        chunk(0).withUnsafeBytes { channel.received($0) }
        let released = DispatchSemaphore(value: 0)
        Thread {
            self.chunk(1).withUnsafeBytes { channel.received($0) }
            released.signal()
        }.start()
        channel.cancel()
        released.wait()
        let stopped = control.cancelled.load(ordering: .relaxed)
        #expect(stopped)
    }
}
