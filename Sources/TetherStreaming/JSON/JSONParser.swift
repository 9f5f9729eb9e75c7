/// A strict RFC 8259 parser over UTF-8 bytes. Wire messages are parsed on the hot path of every
/// stream, so it works on raw bytes and allocates little besides the values it returns: each
/// object and array is built once at its final size (members gather on one scratch stack per
/// parse), integers are read without a detour through text, and a stream that sees the same
/// long strings again and again (ids, event types) can share them through a `JSONStringTable`.
/// It fails with the byte offset instead of crashing on truncated, malformed or hostile input
/// (depth is bounded).
public struct JSONParser {
    public struct Error: Swift.Error, CustomStringConvertible, Sendable, Equatable {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public static let defaultMaxDepth = 256

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(Error) -> JSONValue {
        var text = text
        return try text.withUTF8 { bytes in Result { () throws(Error) in try parse(bytes, maxDepth: maxDepth) } }.get()
    }

    /// `strings`: a table that hands out one shared copy of a string the stream has seen recently.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth,
                             strings: JSONStringTable? = nil) throws(Error) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(Error) in try parse(buffer, maxDepth: maxDepth, strings: strings) }
        }.get()
    }

    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = defaultMaxDepth,
                             strings: JSONStringTable? = nil) throws(Error) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth, strings: strings)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected data after the value") }
        return value
    }

    // Internal, not private: `JSONScanner` walks a document with the same lexer.
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    let strings: JSONStringTable?
    var index = 0
    /// Members of the objects and arrays being parsed, innermost last: a container takes its
    /// own off the top when it closes, so each is allocated once, at its final size.
    private var members: [(key: String, value: JSONValue)] = []
    private var elements: [JSONValue] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, strings: JSONStringTable?) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.strings = strings
    }

    func failure(_ reason: String) -> Error { Error(offset: index, reason: reason) }

    /// Inlined for its common case, compact JSON: the next byte is not whitespace (any byte
    /// above 0x20 is not). It is asked for around every key and value.
    @inline(__always)
    mutating func skipWhitespace() {
        if index < bytes.count, bytes[index] > 0x20 { return }
        skipWhitespaceRun()
    }

    private mutating func skipWhitespaceRun() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(Error) -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(Error) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            throw failure("invalid literal")
        }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(Error) -> JSONValue {
        guard depth <= maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject())
        }
        // Room for a message's members at once, when the first object comes (a `JSONScanner`
        // that builds only a small subtree, or none, allocates nothing or once, never by doubling).
        if members.capacity == 0 { members.reserveCapacity(16) }
        let base = members.count
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input in object") }
            guard bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append((key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input in object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(JSONObject(takeMembers(from: base)))
            default: throw failure("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(Error) -> JSONValue {
        guard depth <= maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array([])
        }
        if elements.capacity == 0 { elements.reserveCapacity(16) }
        let base = elements.count
        while true {
            skipWhitespace()
            let element = try parseValue(depth: depth)
            elements.append(element)
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input in array") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(takeElements(from: base))
            default: throw failure("expected ',' or ']'")
            }
        }
    }

    /// The members a closing object gathered from `base` on, in an array of exactly their count.
    private mutating func takeMembers(from base: Int) -> [(key: String, value: JSONValue)] {
        let count = members.count - base
        var taken: [(key: String, value: JSONValue)] = []
        taken.reserveCapacity(count)
        for index in base..<members.count { taken.append(members[index]) }
        for _ in 0..<count { members.removeLast() }
        return taken
    }

    private mutating func takeElements(from base: Int) -> [JSONValue] {
        let count = elements.count - base
        var taken: [JSONValue] = []
        taken.reserveCapacity(count)
        for index in base..<elements.count { taken.append(elements[index]) }
        for _ in 0..<count { elements.removeLast() }
        return taken
    }

    mutating func parseNumber() throws(Error) -> JSONValue {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
        // The integer part, accumulated as it is read (negative, so Int64.min fits).
        var magnitude: Int64 = 0
        var fits = true
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let digit = Int64(bytes[index] &- 0x30)
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (next, overflow2) = times10.subtractingReportingOverflow(digit)
                if overflow1 || overflow2 { fits = false } else { magnitude = next }
                index += 1
            }
        }
        let isInteger = try skipFractionAndExponent()
        if isInteger, fits {
            if negative { return .int(magnitude) }
            if magnitude != .min { return .int(-magnitude) }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text) else { throw Error(offset: start, reason: "invalid number") }
        return .double(value)
    }

    /// Steps over a number, checked as `parseNumber` checks it, nothing converted (a reader
    /// skips a timestamp or two in every frame).
    mutating func skipNumber() throws(Error) {
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        _ = try skipFractionAndExponent()
    }

    /// A number's fraction and exponent, after its integer part; true when it has neither.
    private mutating func skipFractionAndExponent() throws(Error) -> Bool {
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return isInteger
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    mutating func parseString() throws(Error) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes — find the run's end eight bytes at a time, decode it in one go.
        index = JSONStringBytes.endOfPlainRun(bytes, from: index)
        if index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return strings?.string(run) ?? String(decoding: run, as: UTF8.self)
            }
            if byte < 0x20 { throw failure("control character in string") }
        }
        guard index < bytes.count else { throw failure("unterminated string") }
        var scalars: [UInt8] = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: scalars, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try parseUnicodeEscape()
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    index -= 1
                    throw failure("invalid escape")
                }
            default:
                if byte < 0x20 { throw failure("control character in string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    // MARK: Skipping (validated, nothing built)

    /// Steps over one value, checking it as strictly as `parseValue` would, without building it.
    mutating func skipValue(depth: Int) throws(Error) {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = bytes[index] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            let isObject = close == UInt8(ascii: "}")
            guard depth + 1 <= maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == close {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                if isObject {
                    guard index < bytes.count else { throw failure("unexpected end of input in object") }
                    guard bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a string key") }
                    try skipString()
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
                    index += 1
                    skipWhitespace()
                }
                try skipValue(depth: depth + 1)
                skipWhitespace()
                guard index < bytes.count else { throw failure(isObject ? "unexpected end of input in object" : "unexpected end of input in array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == close {
                    index += 1
                    return
                } else {
                    throw failure(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
            }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try skipNumber()
        default: throw failure("unexpected character")
        }
    }

    /// Steps over a string, escapes checked as `parseString` checks them.
    mutating func skipString() throws(Error) {
        index += 1  // opening quote
        while index < bytes.count {
            index = JSONStringBytes.endOfPlainRun(bytes, from: index)
            guard index < bytes.count else { break }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("unterminated escape") }
                switch bytes[index] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 1
                case UInt8(ascii: "u"):
                    index += 1
                    _ = try parseHex4()
                default:
                    throw failure("invalid escape")
                }
            default:
                if byte < 0x20 { throw failure("control character in string") }
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    private mutating func parseHex4() throws(Error) -> UInt32 {
        guard bytes.count - index >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// `\uXXXX`, joining surrogate pairs; a lone surrogate becomes U+FFFD rather than an error,
    /// as browsers' JSON.parse keeps going on such text.
    private mutating func parseUnicodeEscape() throws(Error) -> Unicode.Scalar {
        let high = try parseHex4()
        if (0xD800...0xDBFF).contains(high) {
            if bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                let save = index
                index += 2
                let low = try parseHex4()
                if (0xDC00...0xDFFF).contains(low) {
                    let combined = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    return Unicode.Scalar(combined) ?? "\u{FFFD}"
                }
                index = save
            }
            return "\u{FFFD}"
        }
        return Unicode.Scalar(high) ?? "\u{FFFD}"
    }
}
