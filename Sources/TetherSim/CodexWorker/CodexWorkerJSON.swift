import Foundation

extension CodexWorkerSimulator {
    /// A JSON value whose objects keep their key order, so the simulator's bodies read like the
    /// Node worker's `JSON.stringify` output (insertion order, no whitespace, `/` unescaped).
    enum JSON: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
        ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
    {
        case null
        case bool(Bool)
        case int(Int)
        case double(Double)
        case string(String)
        case array([JSON])
        case object([(String, JSON)])

        init(stringLiteral value: String) { self = .string(value) }
        init(integerLiteral value: Int) { self = .int(value) }
        init(booleanLiteral value: Bool) { self = .bool(value) }
        init(arrayLiteral elements: JSON...) { self = .array(elements) }
        init(dictionaryLiteral elements: (String, JSON)...) { self = .object(elements) }

        static func == (lhs: JSON, rhs: JSON) -> Bool {
            switch (lhs, rhs) {
            case (.null, .null): return true
            case let (.bool(a), .bool(b)): return a == b
            case let (.int(a), .int(b)): return a == b
            case let (.double(a), .double(b)): return a == b
            case let (.string(a), .string(b)): return a == b
            case let (.array(a), .array(b)): return a == b
            case let (.object(a), .object(b)):
                return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
            default: return false
            }
        }

        static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }
        static func optional(_ value: Int?) -> JSON { value.map(JSON.int) ?? .null }

        subscript(key: String) -> JSON? {
            guard case .object(let pairs) = self else { return nil }
            return pairs.first { $0.0 == key }?.1
        }

        var stringValue: String? {
            if case .string(let s) = self { return s }
            return nil
        }

        var arrayValue: [JSON]? {
            if case .array(let a) = self { return a }
            return nil
        }

        var isObject: Bool {
            if case .object = self { return true }
            return false
        }

        /// Integer view of a number, as JavaScript would see it (`3.0` is an integer).
        var intValue: Int? {
            switch self {
            case .int(let i): return i
            case .double(let d) where d.rounded() == d && abs(d) < 9e15: return Int(d)
            default: return nil
            }
        }

        /// Returns a copy with `key` set (replaced in place, or appended).
        func setting(_ key: String, _ value: JSON) -> JSON {
            guard case .object(var pairs) = self else { return self }
            if let index = pairs.firstIndex(where: { $0.0 == key }) {
                pairs[index].1 = value
            } else {
                pairs.append((key, value))
            }
            return .object(pairs)
        }

        // MARK: Encoding

        var serialized: String {
            var out = ""
            write(to: &out)
            return out
        }

        var data: Data { Data(serialized.utf8) }

        private func write(to out: inout String) {
            switch self {
            case .null: out += "null"
            case .bool(let b): out += b ? "true" : "false"
            case .int(let i): out += String(i)
            case .double(let d):
                if d.isFinite {
                    out += d.rounded() == d && abs(d) < 1e15 ? String(Int(d)) : String(d)
                } else {
                    out += "null"
                }
            case .string(let s): Self.writeString(s, to: &out)
            case .array(let items):
                out += "["
                for (index, item) in items.enumerated() {
                    if index > 0 { out += "," }
                    item.write(to: &out)
                }
                out += "]"
            case .object(let pairs):
                out += "{"
                for (index, pair) in pairs.enumerated() {
                    if index > 0 { out += "," }
                    Self.writeString(pair.0, to: &out)
                    out += ":"
                    pair.1.write(to: &out)
                }
                out += "}"
            }
        }

        private static func writeString(_ s: String, to out: inout String) {
            out += "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case "\u{08}": out += "\\b"
                case "\u{0C}": out += "\\f"
                case _ where scalar.value < 0x20:
                    out += String(format: "\\u%04x", scalar.value)
                default:
                    out.unicodeScalars.append(scalar)
                }
            }
            out += "\""
        }

        // MARK: Decoding

        struct ParseError: Error {}

        /// Parses a request body. Key order of incoming objects does not matter to the simulator.
        static func parse(_ data: Data) throws -> JSON {
            do {
                return try JSONDecoder().decode(JSON.self, from: data)
            } catch {
                throw ParseError()
            }
        }
    }
}

extension CodexWorkerSimulator.JSON: Decodable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([CodexWorkerSimulator.JSON].self) {
            self = .array(a)
        } else {
            let o = try container.decode([String: CodexWorkerSimulator.JSON].self)
            self = .object(o.keys.sorted().map { ($0, o[$0]!) })
        }
    }
}
