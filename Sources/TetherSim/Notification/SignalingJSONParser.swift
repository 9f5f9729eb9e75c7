import Foundation

/// The ordered JSON value of `Support/`, under one local name so this simulator follows that
/// shared type through renames by changing one line.
typealias WireJSON = OrderedJSON

/// Parses the text frames peers send to the relay (and the JSON strings nested inside envelopes)
/// into the ordered `JSON` value. Hand-written rather than `JSONSerialization`: the relay forwards
/// `payload` as it came, so key order must survive, and `true`/`1` must stay distinct (NSNumber
/// bridging on Linux blurs them).
enum SignalingJSONParser {
    static func parse(_ text: String) -> WireJSON? {
        parse(Array(text.utf8))
    }

    static func parse(_ bytes: [UInt8]) -> WireJSON? {
        var reader = Reader(bytes: bytes)
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipWhitespace()
        return reader.index == bytes.count ? value : nil
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        private mutating func consume(_ ascii: Unicode.Scalar) -> Bool {
            skipWhitespace()
            guard current == UInt8(ascii: ascii) else { return false }
            index += 1
            return true
        }

        mutating func value(depth: Int) -> WireJSON? {
            guard depth < 256 else { return nil }
            skipWhitespace()
            switch current {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(WireJSON.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            case .some: return number()
            case nil: return nil
            }
        }

        private mutating func literal(_ word: String, _ value: WireJSON) -> WireJSON? {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
                return nil
            }
            index += expected.count
            return value
        }

        private mutating func object(depth: Int) -> WireJSON? {
            index += 1
            var result = WireJSON.object([])
            if consume("}") { return result }
            repeat {
                skipWhitespace()
                guard current == UInt8(ascii: "\""), let key = string(), consume(":"),
                      let member = value(depth: depth + 1)
                else { return nil }
                result[key] = member // a repeated key keeps its first position and the last value, like JSON.parse
            } while consume(",")
            return consume("}") ? result : nil
        }

        private mutating func array(depth: Int) -> WireJSON? {
            index += 1
            var values: [WireJSON] = []
            if consume("]") { return .array(values) }
            repeat {
                guard let element = value(depth: depth + 1) else { return nil }
                values.append(element)
            } while consume(",")
            return consume("]") ? .array(values) : nil
        }

        private mutating func string() -> String? {
            index += 1
            var utf16: [UInt16] = []
            var run: [UInt8] = []
            func flush() -> Bool {
                guard !run.isEmpty else { return true }
                guard let text = String(bytes: run, encoding: .utf8) else { return false }
                utf16.append(contentsOf: text.utf16)
                run.removeAll(keepingCapacity: true)
                return true
            }
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard flush() else { return nil }
                    // Lone surrogates from `\u` escapes are replaced, as JavaScript strings would print them.
                    return String(decoding: utf16, as: UTF16.self)
                case UInt8(ascii: "\\"):
                    guard flush(), let escape = current else { return nil }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): utf16.append(0x22)
                    case UInt8(ascii: "\\"): utf16.append(0x5C)
                    case UInt8(ascii: "/"): utf16.append(0x2F)
                    case UInt8(ascii: "b"): utf16.append(0x08)
                    case UInt8(ascii: "f"): utf16.append(0x0C)
                    case UInt8(ascii: "n"): utf16.append(0x0A)
                    case UInt8(ascii: "r"): utf16.append(0x0D)
                    case UInt8(ascii: "t"): utf16.append(0x09)
                    case UInt8(ascii: "u"):
                        guard index + 4 <= bytes.count,
                              let unit = UInt16(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                        else { return nil }
                        index += 4
                        utf16.append(unit)
                    default: return nil
                    }
                case 0..<0x20:
                    return nil
                default:
                    run.append(byte)
                }
            }
            return nil
        }

        private mutating func number() -> WireJSON? {
            let start = index
            var integral = true
            func digits() -> Int {
                let from = index
                while let byte = current, (0x30...0x39).contains(byte) { index += 1 }
                return index - from
            }
            if current == UInt8(ascii: "-") { index += 1 }
            let leading = index
            let count = digits()
            guard count > 0, count == 1 || bytes[leading] != UInt8(ascii: "0") else { return nil }
            if current == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard digits() > 0 else { return nil }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                integral = false
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return nil }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if integral, let value = Int(text) { return .int(value) }
            return Double(text).map(WireJSON.double)
        }
    }
}

// Accessors the relay and the desktop use on decoded frames. Prefixed `wire` so they cannot clash
// with helpers other simulators add to the shared `JSON`.
extension WireJSON {
    var wireBool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An integer, also from a JSON number written with a fraction or exponent (`50.0`, `1e3`).
    var wireInt: Int? {
        switch self {
        case .int(let value): value
        case .double(let value) where value.isFinite && value == value.rounded() && abs(value) < 9e15: Int(value)
        default: nil
        }
    }

    var wireIsObject: Bool {
        if case .object = self { return true }
        return false
    }

    var wireMembers: [Member] {
        if case .object(let members) = self { return members }
        return []
    }

    /// A `{String: String}` map as an object with sorted keys (deterministic bytes).
    static func sortedStringMap(_ map: [String: String]) -> WireJSON {
        .object(map.keys.sorted().map { Member(key: $0, value: .string(map[$0]!)) })
    }
}
