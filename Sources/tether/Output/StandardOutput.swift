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
        // A status line ("connecting…", no newline) is taken off the terminal first: what
        // follows would be glued onto it.
        StatusLine.shared.clear()
        writeAsIs(raw)
    }

    /// Writes without touching the status line (the status line's own writes).
    func writeAsIs(_ raw: UnsafeRawBufferPointer) {
        guard FileDescriptorWriter.writeAll(descriptor, raw) == .readerGone else { return }
        // The reader of stdout went away (`| head`): stop quietly, as Unix tools do. A closed
        // stderr only loses the message: the exit status still tells what happened.
        if descriptor != 2 { exit(0) }
    }

    func write(_ text: String) { write(Array(text.utf8)) }
}
