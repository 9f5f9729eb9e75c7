import Foundation
import Testing
@testable import TetherStreaming

@Suite struct FileDescriptorWriterTests {
    /// A descriptor someone else left non-blocking (a parent sharing the pipe) is full at 64 KiB:
    /// the rest of a long line waits for room instead of being dropped.
    @Test func aNonBlockingPipeGetsEveryByte() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
        let line = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 % 251) } + [UInt8(ascii: "\n")]
        let reader = Task.detached { () -> [UInt8] in
            try? await Task.sleep(for: .milliseconds(50))  // the pipe fills first
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(readEnd, &chunk, chunk.count)
                if count <= 0 { break }
                received += chunk[..<count]
            }
            return received
        }
        let outcome = line.withUnsafeBytes { FileDescriptorWriter.writeAll(writeEnd, $0) }
        close(writeEnd)
        let received = await reader.value
        close(readEnd)
        #expect(outcome == .written)
        #expect(received.count == line.count)
        let intact = received == line  // (compared here: a failed #expect would print both megabytes)
        #expect(intact)
    }
}
