#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TetherCore

/// Writes whole lines to a file descriptor with `write(2)`: no stdio buffer sits between a line
/// and a consumer waiting on a pipe, and a line is never split between two writes we issue.
struct LineOutput: @unchecked Sendable {
    let descriptor: Int32

    static let standardOutput = LineOutput(descriptor: 1)
    static let standardError = LineOutput(descriptor: 2)

    var isTerminal: Bool { isatty(descriptor) == 1 }

    func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    func write(_ raw: UnsafeRawBufferPointer) {
        // The reader went away (`| head`): stop quietly, as Unix tools do.
        if FileDescriptorWriter.writeAll(descriptor, raw) == .readerGone { exit(0) }
    }

    func write(_ text: String) { write(Array(text.utf8)) }
}
