#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TetherCore
import TetherStreaming

/// Writes whole lines to a file descriptor with `write(2)`: no stdio buffer sits between a line
/// and a consumer waiting on a pipe, and a line is never split between two writes we issue.
struct LineOutput: Sendable {
    let descriptor: Int32

    static let standardOutput = LineOutput(descriptor: 1)
    static let standardError = LineOutput(descriptor: 2)

    var isTerminal: Bool { isatty(descriptor) == 1 }

    // A status line ("connecting…", no newline) is taken off the terminal before anything else is
    // written: what follows would be glued onto it.

    func write(_ bytes: [UInt8]) {
        StatusLine.shared.clear()
        finish(FileDescriptorWriter.writeAll(descriptor, bytes))
    }

    func write(_ text: String) { write(Array(text.utf8)) }

    /// What `writer` holds, in one write.
    func write(_ writer: JSONWriter) {
        StatusLine.shared.clear()
        finish(FileDescriptorWriter.writeAll(descriptor, writer))
    }

    /// Event lines, encoded by `codec`, in one write.
    func write(lines events: [Event], codec: inout EventCodec, profile: String?, backend: BackendKind?) {
        StatusLine.shared.clear()
        finish(codec.writeLines(events, profile: profile, backend: backend, to: descriptor))
    }

    /// Writes without touching the status line (the status line's own writes).
    func writeAsIs(_ bytes: [UInt8]) {
        finish(FileDescriptorWriter.writeAll(descriptor, bytes))
    }

    private func finish(_ outcome: FileDescriptorWriter.Outcome) {
        guard outcome == .readerGone else { return }
        // The reader of stdout went away (`| head`): stop quietly, as Unix tools do. A closed
        // stderr only loses the message: the exit status still tells what happened.
        if descriptor != 2 { exit(0) }
    }
}
