#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Logging
import TetherCore
import TetherNet
import TetherStreaming

/// stdin as lines (JSON-RPC messages, one a line), read on a thread of its own: a blocking read
/// must not hold a task of the cooperative pool. The stream finishes at EOF or on a read error.
///
/// Read with `read(2)`, not stdio: a descriptor the editor left non-blocking (O_NONBLOCK on a
/// pipe or terminal it shares with us) answers EAGAIN whenever the editor is quiet, which stdio
/// takes for the end of input — the agent would stop at the editor's first pause. Here EAGAIN
/// waits for input with poll(2).
public enum StdinLines {
    /// The longest message taken from the editor. A prompt with images runs to megabytes; a
    /// longer line is skipped (and said on stderr) rather than buffered without end.
    public static let maxLineLength = 64 << 20

    public static func stream(fileDescriptor: Int32 = STDIN_FILENO, maxLineLength: Int = maxLineLength,
                              logger: Logger? = nil) -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                lines(from: fileDescriptor, maxLineLength: maxLineLength, logger: logger) { continuation.yield($0) }
                continuation.finish()
            }
            thread.name = "tether-acp-stdin"
            thread.start()
        }
    }

    /// Reads `descriptor` to its end, handing each line (without LF or CRLF; empty lines
    /// skipped; invalid UTF-8 repaired) to `deliver`. A last line without LF is delivered too,
    /// as it came.
    static func lines(from descriptor: Int32, maxLineLength: Int, logger: Logger?, _ deliver: (String) -> Void) {
        var framer = LineFramer(maxLineLength: maxLineLength)
        func emit(_ output: LineFramer.Output) {
            switch output {
            case .line(let bytes):
                deliver(String(decoding: bytes, as: UTF8.self))
            case .lineTooLong(let limit):
                logger?.error("a message from the editor is longer than \(limit) bytes; it was skipped and is not answered")
            }
        }
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        reading: while true {
            let count = FileDescriptorReader.read(descriptor, into: &chunk)
            if count > 0 {
                framer.feed(chunk[..<count]).forEach(emit)
                continue
            }
            if count == 0 { break }
            switch errno {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                if poll(&waiting, 1, -1) < 0 && errno != EINTR {
                    logger?.error("waiting for stdin failed: \(String(cString: strerror(errno))); serving no more requests")
                    break reading
                }
            case let code:
                logger?.error("reading stdin failed: \(String(cString: strerror(code))); serving no more requests")
                break reading
            }
        }
        if case .truncated(let fragment) = framer.finish(), !fragment.isEmpty {
            deliver(String(decoding: fragment, as: UTF8.self))
        }
    }
}
