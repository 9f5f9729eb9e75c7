#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes bytes to a file descriptor with `write(2)` until all are out: the one place stdout is
/// written whole (event lines, `tether acp`'s JSON-RPC). A descriptor left non-blocking by
/// whoever shares it (a parent that set O_NONBLOCK on the pipe or terminal) answers EAGAIN when
/// full: that waits for room with poll(2) instead of dropping the rest of the line, which would
/// glue the next line onto half of this one.
public enum FileDescriptorWriter {
    public enum Outcome: Equatable, Sendable {
        case written
        /// The reader went away (EPIPE).
        case readerGone
        case failed(errno: Int32)
    }

    public static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Outcome {
        bytes.withUnsafeBytes { writeAll(descriptor, $0) }
    }

    /// What `writer` holds, written in place (no copy).
    public static func writeAll(_ descriptor: Int32, _ writer: JSONWriter) -> Outcome {
        writer.withUnsafeBytes { writeAll(descriptor, $0) }
    }

    public static func writeAll(_ descriptor: Int32, _ raw: UnsafeRawBufferPointer) -> Outcome {
        var offset = 0
        while offset < raw.count {
            let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            if written >= 0 {
                offset += written
                continue
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                var waiting = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&waiting, 1, -1)
            case EPIPE:
                return .readerGone
            case let code:
                return .failed(errno: code)
            }
        }
        return .written
    }
}
