/// Serializes `JSONValue`s into compact UTF-8 JSON. Every line Tether prints goes through here,
/// so it appends straight into a byte buffer rather than building intermediate strings.
///
/// The buffer is memory of its own, the bytes written being its first `count`: an append is a
/// copy into room that is already there. A writer is a value: a copy shares the memory until
/// either writes, and each public write checks that once (copy on write), not each byte and
/// piece it appends. (An array's append checked its uniqueness and capacity once per piece and
/// per byte, and writing through the array's subscript still checked uniqueness and bounds
/// many times a line: bench/PROFILE.md has the numbers.)
public struct JSONWriter: @unchecked Sendable {  // the memory is changed only when `owner` is unique
    /// Owns the memory (frees it when the last writer sharing it goes) and says whether it is shared.
    private final class Owner {
        let base: UnsafeMutablePointer<UInt8>
        init(capacity: Int) { base = .allocate(capacity: capacity) }
        deinit { base.deallocate() }
    }

    private var owner: Owner
    /// `owner`'s memory, and how many bytes it has room for.
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// How many bytes have been written (the rest of the memory is room).
    public private(set) var count = 0

    public init(reservingCapacity capacity: Int = 256) {
        self.capacity = Swift.max(capacity, 16)
        owner = Owner(capacity: self.capacity)
        base = owner.base
    }

    /// The bytes written, as an array of their own.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// The bytes written from `start` (a `count` read earlier) on.
    public func bytes(from start: Int) -> [UInt8] {
        precondition(start >= 0 && start <= count, "a mark past what was written")
        return Array(UnsafeBufferPointer(start: base + start, count: count - start))
    }

    public var isEmpty: Bool { count == 0 }

    /// Appends the bytes written from `start` (a `count` read earlier) on to `array`, copied once.
    public func appendBytes(from start: Int, to array: inout [UInt8]) {
        precondition(start >= 0 && start <= count, "a mark past what was written")
        withUnsafeBytes { array.append(contentsOf: $0[start...]) }
    }

    /// The bytes written, borrowed in place.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withExtendedLifetime(owner) { try body(UnsafeRawBufferPointer(start: base, count: count)) }
    }

    /// Starts over, keeping the room.
    public mutating func reset() { count = 0 }

    /// Before a write: memory shared with a copy of this writer is copied first (once per
    /// public write, not per byte).
    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&owner) { moveTo(capacity: capacity) }
    }

    public mutating func write(_ value: JSONValue) {
        makeUnique()
        emit(value)
    }

    private mutating func emit(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number): append(String(number))
        case .double(let number): appendDouble(number)
        case .string(let text): appendString(text)
        case .array(let elements):
            append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { append(UInt8(ascii: ",")) }
                emit(element)
            }
            append(UInt8(ascii: "]"))
        case .object(let object):
            append(UInt8(ascii: "{"))
            // Borrowed where they are: iterating copies each entry (a retain and release of
            // its key and value), on every line's data.
            object.entries.withUnsafeBufferPointer { entries in
                for index in entries.indices {
                    if index > 0 { append(UInt8(ascii: ",")) }
                    appendString(entries[index].key)
                    append(UInt8(ascii: ":"))
                    if case .string(let text) = entries[index].value { appendString(text) } else { emit(entries[index].value) }
                }
            }
            append(UInt8(ascii: "}"))
        }
    }

    /// Writes `"key":` — for callers that stream an object without building it first.
    public mutating func writeKey(_ key: String) {
        makeUnique()
        appendString(key)
        append(UInt8(ascii: ":"))
    }

    public mutating func writeRaw(_ text: String) {
        makeUnique()
        append(text)
    }

    /// Writes text known when the program was built (keys, punctuation) as it is.
    public mutating func writeRaw(_ text: StaticString) {
        makeUnique()
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func writeByte(_ byte: UInt8) {
        makeUnique()
        append(byte)
    }

    /// Appends bytes that are already JSON (what an earlier write produced).
    public mutating func writeRaw(_ json: [UInt8]) {
        makeUnique()
        json.withUnsafeBufferPointer { append($0) }
    }

    /// Appends bytes that are already JSON: a part of what an earlier write produced.
    public mutating func writeRaw(_ json: ArraySlice<UInt8>) {
        makeUnique()
        json.withUnsafeBufferPointer { append($0) }
    }

    /// Appends bytes that are already JSON, borrowed where they are.
    public mutating func writeRaw(_ json: UnsafeBufferPointer<UInt8>) {
        makeUnique()
        append(json)
    }

    public mutating func writeString(_ text: String) {
        makeUnique()
        appendString(text)
    }

    private mutating func append(_ text: String) {
        text.withUTF8InPlace { append($0) }
    }

    private mutating func appendString(_ text: String) {
        text.withUTF8InPlace { appendQuoted($0, asciiOnly: false) }
    }

    private mutating func appendDouble(_ number: Double) {
        guard number.isFinite else { return append("null") }  // JSON has no NaN or infinity
        if number.rounded() == number, abs(number) < 1e15 {
            append(String(Int64(number)))
        } else {
            append(String(number))
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10 }

    /// `writeString(utf8:)` over an array's bytes.
    public mutating func writeString(utf8 text: [UInt8]) {
        text.withUnsafeBytes { writeString(utf8: $0) }
    }

    /// Writes UTF-8 bytes as a JSON string, as `writeString(String(decoding:as:))` would but
    /// without making the String first: ASCII (the common case) is escaped straight from the
    /// bytes; anything else goes through String so invalid sequences become U+FFFD as before.
    public mutating func writeString(utf8 text: UnsafeRawBufferPointer) {
        makeUnique()
        let mark = count
        let utf8 = UnsafeBufferPointer(start: text.baseAddress?.assumingMemoryBound(to: UInt8.self), count: text.count)
        guard appendQuoted(utf8, asciiOnly: true) else {
            count = mark
            return appendString(String(decoding: text, as: UTF8.self))
        }
    }

    /// `utf8` in quotes, escaped as JSON needs. A string with nothing to escape (most) is
    /// written with its quotes in one step. With `asciiOnly` it stops at the first byte of 0x80
    /// or more and returns false (what it wrote is then the caller's to take back).
    @discardableResult
    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>, asciiOnly: Bool) -> Bool {
        let length = utf8.count
        var plain = JSONStringBytes.endOfPlainRun(utf8, from: 0, asciiOnly: asciiOnly)
        if plain == length {
            makeRoom(length + 2)
            let to = base + count
            to.pointee = UInt8(ascii: "\"")
            if let source = utf8.baseAddress { Self.copy(source, to: to + 1, count: length) }
            to[length + 1] = UInt8(ascii: "\"")
            count += length + 2
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

    // MARK: The buffer (after `makeUnique`)

    /// Makes room for `extra` more bytes after `count`, at least doubling when it grows.
    @inline(__always)
    private mutating func makeRoom(_ extra: Int) {
        if count + extra > capacity { moveTo(capacity: Swift.max(count + extra, capacity * 2)) }
    }

    /// Into memory of its own of `newCapacity` bytes, what was written copied.
    private mutating func moveTo(capacity newCapacity: Int) {
        let moved = Owner(capacity: newCapacity)
        moved.base.initialize(from: base, count: count)
        owner = moved
        base = moved.base
        capacity = newCapacity
    }

    private mutating func append(_ byte: UInt8) {
        makeRoom(1)
        base[count] = byte
        count += 1
    }

    private mutating func append(_ source: UnsafeBufferPointer<UInt8>) {
        guard let from = source.baseAddress, !source.isEmpty else { return }
        let length = source.count
        makeRoom(length)
        Self.copy(from, to: base + count, count: length)
        count += length
    }

    /// Copies `count` bytes between buffers that do not overlap. Most pieces of a line are a
    /// few bytes (`,"part":`, a kind, an id): those are copied a word at a time, overlapping,
    /// where a call to `memmove` cost more than the copy (bench/PROFILE.md); longer ones go to
    /// `memmove`.
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
