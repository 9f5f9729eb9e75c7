import Foundation
import Synchronization
import TetherCore
import TetherStreaming

/// Where the agent's JSON-RPC lines go: stdout in `tether acp`, a buffer in tests. Each message is
/// written whole, with its newline, under a lock (concurrent prompts never interleave bytes) and
/// at once (an editor waits on each line).
public final class ACPOutput: Sendable {
    private let sink: Mutex<@Sendable ([UInt8]) -> Void>

    public init(sink: @escaping @Sendable ([UInt8]) -> Void) {
        self.sink = Mutex(sink)
    }

    public func send(_ message: JSONRPCMessage) {
        var bytes = Array(message.line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        sink.withLock { $0(bytes) }
    }

    /// Writes to a file descriptor with `write(2)` (no stdio buffering to flush). A closed pipe
    /// (the editor went away) loses the line; stdin's EOF ends the process soon after.
    public static func fileDescriptor(_ fd: Int32) -> ACPOutput {
        ACPOutput { bytes in
            _ = FileDescriptorWriter.writeAll(fd, bytes)
        }
    }
}
