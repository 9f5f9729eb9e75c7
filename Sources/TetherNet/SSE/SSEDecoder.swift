#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An incremental decoder for `text/event-stream`, following the WHATWG HTML standard's
/// "server-sent events" parsing rules, as a pure state machine: bytes in, outputs out, no I/O.
///
/// Chunks may split the stream anywhere — inside a UTF-8 sequence, between the CR and LF of a
/// CRLF, inside the leading BOM — and the outputs are the same as for the whole stream at once.
///
/// Lines are bounded by `maxLineLength`: a longer line is never buffered. The decoder reports
/// it once, as soon as it is seen, with ``Output/lineTooLong(limit:)``, skips it, and — unless
/// it was a comment — drops the event being assembled (up to the next blank line), because
/// dispatching that event without one of its lines would hand the consumer corrupt data.
public struct SSEDecoder: Sendable {
    /// What the decoder reports while it reads.
    public enum Output: Sendable, Equatable {
        /// A dispatched event.
        case event(SSEEvent)
        /// A comment line's text, without the colon and one leading space; only with `emitComments`.
        case comment(String)
        /// A line exceeded `maxLineLength`: it was dropped, with its event block unless it was a comment.
        case lineTooLong(limit: Int)
    }

    /// Whether comment lines are reported (servers use them as heartbeats; useful for debugging).
    public let emitComments: Bool
    /// The longest line, in bytes without its terminator, that the decoder buffers.
    public let maxLineLength: Int

    /// The last event ID string: committed when an event is dispatched (even one with no data),
    /// and kept across streams so a reconnection can send it as `Last-Event-ID`. Setting it seeds
    /// the ID that events carry until the server sends an `id` field.
    public var lastEventID: String {
        get { committedID }
        set {
            committedID = newValue
            idBuffer = newValue
        }
    }

    /// The reconnection time in milliseconds from the last valid `retry` field, kept across streams.
    public private(set) var reconnectionTime: Int?

    // Line assembly. Only a line split across chunks is copied here; a line that lies whole in
    // one chunk is parsed in place.
    private var lineBuffer: [UInt8] = []
    /// The rest of an oversized line is being skipped, up to its terminator.
    private var discardingLine = false
    /// The previous chunk ended with CR: an LF starting the next chunk completes that CRLF.
    private var skipLeadingLF = false
    /// Bytes of the UTF-8 BOM matched so far at stream start; `nil` once the start is behind us.
    private var bomBytesMatched: Int? = 0

    // The event being assembled (the spec's data and event type buffers), kept as bytes so that
    // UTF-8 is decoded once per event rather than once per line.
    private var dataBuffer: [UInt8] = []
    private var eventType: String = ""
    /// The type the stream named last, reused while it names the same one: a stream names a
    /// handful of types, and one longer than 15 bytes made again for every event was an
    /// allocation an event.
    private var lastEventType: String = ""
    private var eventRetry: Int?
    /// Lines up to the next blank line are ignored: their event lost a line to the length limit.
    private var skippingEvent = false

    /// The spec's last event ID buffer, and the value committed from it at dispatch.
    private var idBuffer: String = ""
    private var committedID: String = ""

    /// - Parameters:
    ///   - emitComments: report comment lines as ``Output/comment(_:)``.
    ///   - maxLineLength: the longest line buffered, in bytes (default 16 MiB).
    public init(emitComments: Bool = false, maxLineLength: Int = 16 << 20) {
        precondition(maxLineLength > 0, "maxLineLength must be positive")
        self.emitComments = emitComments
        self.maxLineLength = maxLineLength
    }

    /// Decodes the next chunk of the stream, calling `emit` for each output in order.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        let count = bytes.count
        guard count > 0 else { return }
        var index = 0

        if let matched = bomBytesMatched {
            index = consumeByteOrderMark(bytes, alreadyMatched: matched, emit)
        }
        if skipLeadingLF, index < count {
            skipLeadingLF = false
            if bytes[index] == .lf { index += 1 }
        }

        // Positions of the next LF and CR; each is searched again only once passed, so a chunk
        // is scanned in linear time even when it mixes the two.
        var nextLF = -1
        var nextCR = -1
        while index < count {
            if nextLF < index { nextLF = bytes.firstIndex(of: .lf, from: index) ?? count }
            if nextCR < index { nextCR = bytes.firstIndex(of: .cr, from: index) ?? count }
            let end = min(nextLF, nextCR)
            guard end < count else {
                appendPartialLine(UnsafeRawBufferPointer(rebasing: bytes[index..<count]), emit)
                return
            }
            completeLine(UnsafeRawBufferPointer(rebasing: bytes[index..<end]), emit)
            index = end + 1
            if bytes[end] == .cr {
                if index == count {
                    skipLeadingLF = true
                } else if bytes[index] == .lf {
                    index += 1
                }
            }
        }
    }

    /// Decodes the next chunk of the stream and returns its outputs.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Output] {
        var outputs: [Output] = []
        bytes.withContiguousRawBytes { feed($0) { outputs.append($0) } }
        return outputs
    }

    /// Decodes the next chunk of the stream, given as text, and returns its outputs.
    public mutating func feed(_ string: String) -> [Output] {
        var string = string
        var outputs: [Output] = []
        string.withUTF8 { feed(UnsafeRawBufferPointer($0)) { outputs.append($0) } }
        return outputs
    }

    /// Ends the stream: per the spec, an event without its closing blank line is discarded, and
    /// so is an unterminated last line. The decoder is then ready for the next connection's
    /// stream; it keeps ``lastEventID`` and ``reconnectionTime``, which outlive a connection.
    public mutating func finish() {
        lineBuffer = []
        discardingLine = false
        skipLeadingLF = false
        bomBytesMatched = 0
        skippingEvent = false
        resetEvent()
        idBuffer = committedID
    }

    // MARK: Test visibility

    /// Bytes of an incomplete line currently buffered (never more than `maxLineLength`).
    var bufferedLineByteCount: Int { lineBuffer.count }
    /// Capacity of the incomplete-line buffer.
    var lineBufferCapacity: Int { lineBuffer.capacity }
}

// MARK: - Lines

extension SSEDecoder {
    /// Buffers released after a line or event larger than this, so one burst does not pin memory.
    private static let retainedCapacity = 64 << 10
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Strips a UTF-8 BOM at stream start (only there: later it is data), even when chunks split it.
    /// Returns the index of the first byte after it.
    private mutating func consumeByteOrderMark(
        _ bytes: UnsafeRawBufferPointer, alreadyMatched: Int, _ emit: (Output) -> Void
    ) -> Int {
        var matched = alreadyMatched
        var index = 0
        while index < bytes.count, matched < 3 {
            guard bytes[index] == Self.byteOrderMark[matched] else {
                // Not a BOM after all: the bytes taken so far belong to the first line.
                bomBytesMatched = nil
                Self.byteOrderMark[..<matched].withUnsafeBytes { appendPartialLine($0, emit) }
                return index
            }
            matched += 1
            index += 1
        }
        bomBytesMatched = matched == 3 ? nil : matched
        return index
    }

    /// Buffers the start of a line that continues in a later chunk.
    private mutating func appendPartialLine(_ segment: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        guard !segment.isEmpty, !discardingLine else { return }
        let needed = lineBuffer.count + segment.count
        guard needed <= maxLineLength else {
            rejectOversizedLine(startingWith: lineBuffer.first ?? segment[0], emit)
            discardingLine = true
            return
        }
        if lineBuffer.capacity < needed {
            // Grow geometrically but never past the limit, which is the memory bound we promise.
            lineBuffer.reserveCapacity(Swift.min(Swift.max(needed, lineBuffer.capacity * 2), maxLineLength))
        }
        lineBuffer.append(contentsOf: segment)
    }

    /// Handles the line that `segment` (the bytes before a terminator) completes.
    private mutating func completeLine(_ segment: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        if discardingLine {
            discardingLine = false
            return
        }
        guard lineBuffer.count + segment.count <= maxLineLength else {
            rejectOversizedLine(startingWith: lineBuffer.first ?? segment[0], emit)
            return
        }
        if lineBuffer.isEmpty {
            processLine(segment, emit)
            return
        }
        lineBuffer.append(contentsOf: segment)
        // Moved out so that parsing (which mutates self) does not overlap an access to the buffer.
        var line: [UInt8] = []
        swap(&line, &lineBuffer)
        line.withUnsafeBytes { processLine($0, emit) }
        if line.capacity <= Self.retainedCapacity {
            line.removeAll(keepingCapacity: true)
            lineBuffer = line
        }
    }

    private mutating func rejectOversizedLine(startingWith firstByte: UInt8, _ emit: (Output) -> Void) {
        lineBuffer = []
        emit(.lineTooLong(limit: maxLineLength))
        // A lost comment carries no event data; any other line may have been part of the event.
        guard firstByte != .colon else { return }
        // The ID and type set earlier in this block belong to the event being dropped.
        resetEvent()
        idBuffer = committedID
        skippingEvent = true
    }

    /// Interprets one complete line (without its terminator).
    private mutating func processLine(_ line: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        if line.isEmpty {
            if skippingEvent {
                skippingEvent = false
                resetEvent()
            } else {
                dispatch(emit)
            }
            return
        }
        if line[0] == .colon {
            if emitComments {
                emit(.comment(Self.decode(Self.value(of: line, after: 0))))
            }
            return
        }
        guard !skippingEvent else { return }

        let colon = line.firstIndex(of: .colon, from: 0)
        let name = UnsafeRawBufferPointer(rebasing: line[..<(colon ?? line.count)])
        let value = colon.map { Self.value(of: line, after: $0) } ?? UnsafeRawBufferPointer(rebasing: line[line.count...])
        // Field names compare as bytes: only the values need decoding.
        if name.equals("data") {
            dataBuffer.append(contentsOf: value)
            dataBuffer.append(.lf)
        } else if name.equals("event") {
            // Equal bytes are valid UTF-8 (the kept type's), so they decode to the kept type.
            if !Self.spells(lastEventType, value) { lastEventType = Self.decode(value) }
            eventType = lastEventType
        } else if name.equals("id") {
            // The spec ignores an ID containing U+0000; a NUL byte is exactly that code point.
            if value.firstIndex(of: 0, from: 0) == nil {
                idBuffer = Self.decode(value)
            }
        } else if name.equals("retry") {
            if let milliseconds = Self.parseRetry(value) {
                reconnectionTime = milliseconds
                eventRetry = milliseconds
            }
        }
        // Any other field is ignored, as the spec requires.
    }

    /// Dispatches the event assembled so far, if it has data.
    private mutating func dispatch(_ emit: (Output) -> Void) {
        // Committed even when nothing is dispatched: an `id`-only block still moves the resume point.
        committedID = idBuffer
        guard !dataBuffer.isEmpty else {
            resetEvent()
            return
        }
        var data = Array(dataBuffer[..<(dataBuffer.count - 1)])
        // The stream is UTF-8 decoded with replacement (the spec): ASCII needs nothing, anything
        // else is repaired once here, so every consumer reads valid UTF-8.
        if !Self.isASCII(data) { data = Array(String(decoding: data, as: UTF8.self).utf8) }
        let type = eventType.isEmpty ? "message" : eventType
        let event = SSEEvent(type: type, dataBytes: data, id: committedID, retry: eventRetry)
        resetEvent()
        emit(.event(event))
    }

    private mutating func resetEvent() {
        dataBuffer.removeAll(keepingCapacity: dataBuffer.capacity <= Self.retainedCapacity)
        eventType = ""
        eventRetry = nil
    }

    /// The field value after the colon at `colon`, without one leading space (only one).
    private static func value(of line: UnsafeRawBufferPointer, after colon: Int) -> UnsafeRawBufferPointer {
        var start = colon + 1
        if start < line.count, line[start] == .space { start += 1 }
        return UnsafeRawBufferPointer(rebasing: line[start...])
    }

    /// Whether every byte is below 0x80, eight bytes at a time (this runs on every event's data).
    static func isASCII(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var index = 0
            var high: UInt64 = 0
            while index + 8 <= raw.count {
                high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                index += 8
            }
            while index < raw.count {
                high |= UInt64(raw[index])
                index += 1
            }
            return high & 0x8080_8080_8080_8080 == 0
        }
    }

    /// UTF-8 with replacement characters for invalid sequences, as the spec's decoder does.
    /// Whether `text`'s UTF-8 is exactly `bytes`.
    private static func spells(_ text: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.count == bytes.count && (bytes.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        } ?? false
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                             count: bytes.count), as: UTF8.self)
    }

    /// A retry value counts only if it is ASCII digits and nothing else; an out-of-range one saturates.
    private static func parseRetry(_ value: UnsafeRawBufferPointer) -> Int? {
        guard !value.isEmpty else { return nil }
        var result = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (shifted, overflowed) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = shifted.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            result = overflowed || overflowedAgain ? Int.max : sum
        }
        return result
    }
}

extension UInt8 {
    fileprivate static let lf = UInt8(ascii: "\n")
    fileprivate static let cr = UInt8(ascii: "\r")
    fileprivate static let colon = UInt8(ascii: ":")
    fileprivate static let space = UInt8(ascii: " ")
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes spell `name` exactly.
    fileprivate func equals(_ name: StaticString) -> Bool {
        guard count == name.utf8CodeUnitCount else { return false }
        guard let base = baseAddress else { return count == 0 }
        return memcmp(base, name.utf8Start, count) == 0
    }
}
