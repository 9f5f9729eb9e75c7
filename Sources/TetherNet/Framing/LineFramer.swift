#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits a TCP byte stream into JSON-lines frames, as a pure state machine: bytes in, frames out.
///
/// A frame ends at LF; one CR before the LF is stripped (CRLF senders), and empty lines are
/// skipped. Memory is bounded by `maxLineLength`: a longer line is never buffered — the framer
/// reports ``Output/lineTooLong(limit:)`` once, drops bytes up to the next LF, and carries on
/// with the line after it, so one bad message does not cost the connection. Overflow is an
/// output rather than a thrown error so that the rest of the chunk is still framed.
public struct LineFramer: Sendable {
    /// What feeding bytes yields, in stream order.
    public enum Output: Sendable, Equatable {
        /// A complete, non-empty line: its own bytes, without the LF and one CR before it.
        case line([UInt8])
        /// A line grew past `maxLineLength`; its bytes up to the next LF are dropped.
        case lineTooLong(limit: Int)
    }

    /// How the input ended, from ``finish()``.
    public enum EndOfInput: Sendable, Equatable {
        /// The input ended on a line boundary.
        case clean
        /// The input ended inside a line: a truncated frame. `fragment` holds its bytes, or is
        /// empty when that line had already been reported as too long.
        case truncated(fragment: [UInt8])
    }

    /// The longest line, in bytes without its LF and CR, that the framer delivers.
    public let maxLineLength: Int

    /// The start of a line that continues in a later chunk (a line whole in one chunk is not copied).
    private var buffer: [UInt8] = []
    /// The buffered line's last byte was CR. It is held back: it is stripped if an LF follows, so it
    /// must not count against the limit, nor be buffered beyond it, until we know.
    private var heldCR = false
    /// Bytes of an oversized line are being skipped, up to the next LF.
    private var discarding = false

    /// - Parameter maxLineLength: the longest line delivered, in bytes; longer ones are reported and skipped.
    public init(maxLineLength: Int) {
        precondition(maxLineLength > 0, "maxLineLength must be positive")
        self.maxLineLength = maxLineLength
    }

    /// Frames the next chunk, calling `emit` for each output in order.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        var index = 0
        while index < bytes.count {
            guard let lf = bytes.firstIndex(of: .lf, from: index) else {
                appendFragment(UnsafeRawBufferPointer(rebasing: bytes[index...]), emit)
                return
            }
            completeLine(UnsafeRawBufferPointer(rebasing: bytes[index..<lf]), emit)
            index = lf + 1
        }
    }

    /// Frames the next chunk and returns its outputs.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Output] {
        var outputs: [Output] = []
        bytes.withContiguousRawBytes { feed($0) { outputs.append($0) } }
        return outputs
    }

    /// Ends the input and says whether it stopped mid-line. The framer is then empty and reusable.
    public mutating func finish() -> EndOfInput {
        defer {
            buffer = []
            heldCR = false
            discarding = false
        }
        if discarding { return .truncated(fragment: []) }
        if buffer.isEmpty && !heldCR { return .clean }
        return .truncated(fragment: heldCR ? buffer + [.cr] : buffer)
    }

    // MARK: Test visibility

    /// Bytes of an incomplete line held (never more than `maxLineLength`).
    var bufferedByteCount: Int { buffer.count + (heldCR ? 1 : 0) }
    /// Capacity of the incomplete-line buffer.
    var bufferCapacity: Int { buffer.capacity }
}

extension LineFramer {
    /// Buffers released after a line larger than this, so one burst does not pin memory.
    private static let retainedCapacity = 64 << 10

    /// Buffers `fragment`, the start or middle of a line with no LF in this chunk.
    private mutating func appendFragment(_ fragment: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        guard !discarding, !fragment.isEmpty else { return }
        let endsWithCR = fragment[fragment.count - 1] == .cr
        let body = UnsafeRawBufferPointer(rebasing: fragment[..<(fragment.count - (endsWithCR ? 1 : 0))])
        let needed = buffer.count + (heldCR ? 1 : 0) + body.count
        guard needed <= maxLineLength else {
            reject(emit)
            discarding = true
            return
        }
        if buffer.capacity < needed {
            // Grow geometrically but never past the limit, which is the memory bound we promise.
            buffer.reserveCapacity(Swift.min(Swift.max(needed, buffer.capacity * 2), maxLineLength))
        }
        if heldCR { buffer.append(.cr) }  // not followed by LF after all: it is content
        buffer.append(contentsOf: body)
        heldCR = endsWithCR
    }

    /// Ends the current line with `tail`, the bytes before its LF.
    private mutating func completeLine(_ tail: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        if discarding {
            discarding = false
            return
        }
        // The CR to strip is the last byte before the LF: the end of `tail`, or the held one.
        let tailEndsWithCR = !tail.isEmpty && tail[tail.count - 1] == .cr
        let body = UnsafeRawBufferPointer(rebasing: tail[..<(tail.count - (tailEndsWithCR ? 1 : 0))])
        let heldIsContent = heldCR && !tail.isEmpty
        let length = buffer.count + (heldIsContent ? 1 : 0) + body.count
        defer { clearBuffer() }
        guard length <= maxLineLength else {
            emit(.lineTooLong(limit: maxLineLength))
            return
        }
        guard length > 0 else { return }
        if buffer.isEmpty && !heldIsContent {
            emit(.line(Array(body)))
            return
        }
        var line: [UInt8] = []
        line.reserveCapacity(length)
        line.append(contentsOf: buffer)
        if heldIsContent { line.append(.cr) }
        line.append(contentsOf: body)
        emit(.line(line))
    }

    private mutating func reject(_ emit: (Output) -> Void) {
        emit(.lineTooLong(limit: maxLineLength))
        buffer = []
        heldCR = false
    }

    private mutating func clearBuffer() {
        buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
        heldCR = false
    }
}

extension UInt8 {
    fileprivate static let lf = UInt8(ascii: "\n")
    fileprivate static let cr = UInt8(ascii: "\r")
}

