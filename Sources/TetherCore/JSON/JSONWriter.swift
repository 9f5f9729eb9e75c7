/// Serializes `JSONValue`s into compact UTF-8 JSON. Every line Tether prints goes through here,
/// so it appends straight into a byte buffer rather than building intermediate strings.
///
/// The buffer is an array kept at its full size, the bytes written being its first `count`:
/// an append is a copy into room that is already there. (Appending to the array itself checked
/// its uniqueness and capacity once per piece and per byte, and its `append(contentsOf:)` cost
/// about 90 instructions a call, several calls for every field of every line.)
public struct JSONWriter: Sendable {
    private var storage: [UInt8]
    /// How many bytes have been written (the rest of `storage` is room).
    public private(set) var count = 0

    public init(reservingCapacity capacity: Int = 256) {
        storage = [UInt8](repeating: 0, count: Swift.max(capacity, 16))
    }

    /// The bytes written, as an array of their own.
    public var bytes: [UInt8] { Array(storage[..<count]) }

    /// The bytes written from `start` (a `count` read earlier) on.
    public func bytes(from start: Int) -> [UInt8] { Array(storage[start..<count]) }

    public var isEmpty: Bool { count == 0 }

    /// The bytes written, borrowed in place.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let count = count
        return try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// Starts over, keeping the room.
    public mutating func reset() { count = 0 }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let flag): writeRaw(flag ? "true" : "false")
        case .int(let number): writeRaw(String(number))
        case .double(let number): writeDouble(number)
        case .string(let text): writeString(text)
        case .array(let elements):
            append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { append(UInt8(ascii: ",")) }
                write(element)
            }
            append(UInt8(ascii: "]"))
        case .object(let object):
            append(UInt8(ascii: "{"))
            // Borrowed where they are: iterating copies each entry (a retain and release of
            // its key and value), on every line's data.
            object.entries.withUnsafeBufferPointer { entries in
                for index in entries.indices {
                    if index > 0 { append(UInt8(ascii: ",")) }
                    writeString(entries[index].key)
                    append(UInt8(ascii: ":"))
                    if case .string(let text) = entries[index].value { writeString(text) } else { write(entries[index].value) }
                }
            }
            append(UInt8(ascii: "}"))
        }
    }

    /// Writes `"key":` — for callers that stream an object without building it first.
    public mutating func writeKey(_ key: String) {
        writeString(key)
        append(UInt8(ascii: ":"))
    }

    public mutating func writeRaw(_ text: String) {
        text.withUTF8InPlace { append($0) }
    }

    /// Writes text known when the program was built (keys, punctuation) as it is.
    public mutating func writeRaw(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func writeByte(_ byte: UInt8) { append(byte) }

    /// Appends bytes that are already JSON (what an earlier write produced).
    public mutating func writeRaw(_ json: [UInt8]) { json.withUnsafeBufferPointer { append($0) } }

    /// Appends bytes that are already JSON, borrowed where they are.
    public mutating func writeRaw(_ json: UnsafeBufferPointer<UInt8>) { append(json) }

    private mutating func writeDouble(_ number: Double) {
        guard number.isFinite else { return writeRaw("null") }  // JSON has no NaN or infinity
        if number.rounded() == number, abs(number) < 1e15 {
            writeRaw(String(Int64(number)))
        } else {
            writeRaw(String(number))
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10 }

    /// Writes UTF-8 bytes as a JSON string, as `writeString(String(decoding:as:))` would but
    /// without making the String first: ASCII (the common case) is escaped straight from the
    /// bytes; anything else goes through String so invalid sequences become U+FFFD as before.
    public mutating func writeString(utf8 text: UnsafeRawBufferPointer) {
        let mark = count
        let utf8 = UnsafeBufferPointer(start: text.baseAddress?.assumingMemoryBound(to: UInt8.self), count: text.count)
        guard appendQuoted(utf8, asciiOnly: true) else {
            count = mark
            return writeString(String(decoding: text, as: UTF8.self))
        }
    }

    public mutating func writeString(_ text: String) {
        text.withUTF8InPlace { appendQuoted($0, asciiOnly: false) }
    }

    /// `utf8` in quotes, escaped as JSON needs. A string with nothing to escape (most) is
    /// written with its quotes in one step. With `asciiOnly` it stops at the first byte of 0x80
    /// or more and returns false (what it wrote is then the caller's to take back).
    @discardableResult
    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>, asciiOnly: Bool) -> Bool {
        let length = utf8.count
        var plain = JSONStringBytes.endOfPlainRun(utf8, from: 0, asciiOnly: asciiOnly)
        if plain == length {
            let start = count
            makeRoom(length + 2)
            storage.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress.unsafelyUnwrapped + start
                base.pointee = UInt8(ascii: "\"")
                if let source = utf8.baseAddress { Self.copy(source, to: base + 1, count: length) }
                base[length + 1] = UInt8(ascii: "\"")
            }
            count = start + length + 2
            return true
        }
        append(UInt8(ascii: "\""))
        var runStart = 0
        while true {
            append(UnsafeBufferPointer(rebasing: utf8[runStart..<plain]))
            guard plain < length else { break }
            let byte = utf8[plain]
            if byte >= 0x80 { return false }  // only stops there with `asciiOnly`
            appendEscape(byte)
            runStart = plain + 1
            plain = JSONStringBytes.endOfPlainRun(utf8, from: runStart, asciiOnly: asciiOnly)
        }
        append(UInt8(ascii: "\""))
        return true
    }

    /// `"`, `\`, or a control character, escaped.
    private mutating func appendEscape(_ byte: UInt8) {
        append(0x5C)
        switch byte {
        case 0x22: append(0x22)
        case 0x5C: append(0x5C)
        case 0x0A: append(UInt8(ascii: "n"))
        case 0x0D: append(UInt8(ascii: "r"))
        case 0x09: append(UInt8(ascii: "t"))
        default:
            append(UInt8(ascii: "u"))
            append(0x30)
            append(0x30)
            append(Self.hexDigit(byte >> 4))
            append(Self.hexDigit(byte & 0xF))
        }
    }

    // MARK: The buffer

    /// Makes room for `extra` more bytes after `count`, at least doubling when it grows.
    @inline(__always)
    private mutating func makeRoom(_ extra: Int) {
        if count + extra > storage.count { grow(toHold: count + extra) }
    }

    private mutating func grow(toHold needed: Int) {
        storage.append(contentsOf: repeatElement(0, count: Swift.max(needed, storage.count * 2) - storage.count))
    }

    private mutating func append(_ byte: UInt8) {
        makeRoom(1)
        storage[count] = byte
        count += 1
    }

    private mutating func append(_ source: UnsafeBufferPointer<UInt8>) {
        guard let from = source.baseAddress, !source.isEmpty else { return }
        let start = count, length = source.count
        makeRoom(length)
        storage.withUnsafeMutableBufferPointer { buffer in
            Self.copy(from, to: buffer.baseAddress.unsafelyUnwrapped + start, count: length)
        }
        count = start + length
    }

    /// Copies `count` bytes between buffers that do not overlap. Most pieces of a line are a
    /// few bytes (`,"part":`, a kind, an id): those are copied a word at a time, overlapping,
    /// where a call to `memmove` cost more than the copy (about 35 instructions a call,
    /// nearly 20 calls a line); longer ones go to `memmove`.
    @inline(__always)
    static func copy(_ source: UnsafePointer<UInt8>, to destination: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(destination)
        switch count {
        case 8...16:
            let head = from.loadUnaligned(as: UInt64.self)
            let tail = from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self)
        case 17...32:
            let first = from.loadUnaligned(as: UInt64.self)
            let second = from.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let third = from.loadUnaligned(fromByteOffset: count - 16, as: UInt64.self)
            let fourth = from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            to.storeBytes(of: first, as: UInt64.self)
            to.storeBytes(of: second, toByteOffset: 8, as: UInt64.self)
            to.storeBytes(of: third, toByteOffset: count - 16, as: UInt64.self)
            to.storeBytes(of: fourth, toByteOffset: count - 8, as: UInt64.self)
        case 4..<8:
            let head = from.loadUnaligned(as: UInt32.self)
            let tail = from.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: count - 4, as: UInt32.self)
        case 1..<4:
            destination[0] = source[0]
            destination[count / 2] = source[count / 2]
            destination[count - 1] = source[count - 1]
        case ...0:
            break
        default:
            destination.update(from: source, count: count)
        }
    }
}

extension JSONValue {
    /// Compact JSON text.
    public var serialized: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}
