#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        var offset = 0
        while offset < raw.count {
            let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                // The reader went away (`| head`): stop quietly, as Unix tools do.
                if errno == EPIPE { exit(0) }
                return
            }
            offset += written
        }
    }

    func write(_ text: String) { write(Array(text.utf8)) }
}
