/// Serializes `JSONValue`s into compact UTF-8 JSON. Every line Tether prints goes through here,
/// so it appends straight into a byte buffer rather than building intermediate strings.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let flag): writeRaw(flag ? "true" : "false")
        case .int(let number): writeRaw(String(number))
        case .double(let number): writeDouble(number)
        case .string(let text): writeString(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for entry in object {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(entry.key)
                bytes.append(UInt8(ascii: ":"))
                write(entry.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `"key":` — for callers that stream an object without building it first.
    public mutating func writeKey(_ key: String) {
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func writeRaw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes text known when the program was built (keys, punctuation) as it is.
    public mutating func writeRaw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func writeByte(_ byte: UInt8) { bytes.append(byte) }

    /// Appends bytes that are already JSON (what an earlier write produced).
    public mutating func writeRaw(_ json: [UInt8]) { bytes.append(contentsOf: json) }

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
        let mark = bytes.count
        bytes.reserveCapacity(bytes.count + text.count + 2)
        bytes.append(UInt8(ascii: "\""))
        let utf8 = UnsafeBufferPointer(start: text.baseAddress?.assumingMemoryBound(to: UInt8.self), count: text.count)
        guard appendEscaped(utf8, asciiOnly: true) else {
            bytes.removeSubrange(mark...)
            return writeString(String(decoding: text, as: UTF8.self))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func writeString(_ text: String) {
        // Read in place: `withUTF8` would need a copy of the string to mutate (a retain and a
        // release per string written), and every native string is contiguous.
        let written: Void? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            appendQuoted(utf8)
        }
        guard written == nil else { return }
        var text = text
        text.withUTF8 { appendQuoted($0) }
    }

    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.reserveCapacity(bytes.count + utf8.count + 2)
        bytes.append(UInt8(ascii: "\""))
        appendEscaped(utf8, asciiOnly: false)
        bytes.append(UInt8(ascii: "\""))
    }

    /// UTF-8 text as the inside of a JSON string: runs without anything to escape are copied
    /// whole, found eight bytes at a time. With `asciiOnly` it stops at the first byte of 0x80 or
    /// more and returns false (what it appended is then the caller's to take back).
    @discardableResult
    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, asciiOnly: Bool) -> Bool {
        guard let base = utf8.baseAddress else { return true }
        let count = utf8.count
        let raw = UnsafeRawPointer(base)
        var runStart = 0
        var index = 0
        while index < count {
            while index + 8 <= count, !JSONStringBytes.needsAttention(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self), asciiOnly: asciiOnly) {
                index += 8
            }
            guard index < count else { break }
            let byte = base[index]
            if byte >= 0x80, asciiOnly { return false }
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C else {
                index += 1
                continue
            }
            if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
            index += 1
            runStart = index
            bytes.append(0x5C)
            switch byte {
            case 0x22: bytes.append(0x22)
            case 0x5C: bytes.append(0x5C)
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            default:
                bytes.append(UInt8(ascii: "u"))
                bytes.append(0x30)
                bytes.append(0x30)
                bytes.append(Self.hexDigit(byte >> 4))
                bytes.append(Self.hexDigit(byte & 0xF))
            }
        }
        if runStart < count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count])) }
        return true
    }
}

extension JSONValue {
    /// Compact JSON text.
    public var serialized: String {
        var writer = JSONWriter()
        writer.write(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
