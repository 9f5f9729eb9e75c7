import Foundation

extension CodexMonitorSimulator {
    /// The daemon's line protocol: one JSON object per `\n`-terminated line, no `jsonrpc` field,
    /// errors as `{message}` only (notes §1.2).
    enum Wire {
        /// A parsed client line that names a method. `id` is kept as sent: only a non-negative
        /// integer earns a response (serde `as_u64`), anything else is executed silently.
        struct Request: Sendable {
            var id: JSON?
            var method: String
            var params: JSON

            /// The id to echo, or nil when the daemon would not answer.
            var responseID: Int? {
                if case .int(let value) = id, value >= 0 { return value }
                return nil
            }
        }

        /// Parses one trimmed line. Unparseable JSON, non-objects and objects without a string
        /// `method` are dropped, as the daemon drops them (no error response).
        static func request(fromLine line: [UInt8]) -> Request? {
            guard let value = CodexMonitorJSONParser.parse(line),
                  case .object = value,
                  let method = value["method"]?.stringValue
            else { return nil }
            return Request(id: value["id"], method: method, params: value["params"] ?? .null)
        }

        static func result(id: Int, _ result: JSON) -> JSON {
            ["id": .int(id), "result": result]
        }

        static func error(id: Int, _ message: String) -> JSON {
            ["id": .int(id), "error": ["message": .string(message)]]
        }

        static func notification(_ method: String, _ params: JSON) -> JSON {
            ["method": .string(method), "params": params]
        }

        /// `app-server-event`: note the snake_case `workspace_id` (§3).
        static func appServerEvent(workspaceID: String, message: JSON) -> JSON {
            notification("app-server-event", ["workspace_id": .string(workspaceID), "message": message])
        }

        /// A codex-backed result as the daemon returns it: the whole app-server JSON-RPC response (§1.5).
        static func raw(innerID: Int, result: JSON) -> JSON {
            ["id": .int(innerID), "result": result]
        }

        /// An app-server error, which the daemon still reports as a success (§1.5).
        static func rawError(innerID: Int, code: Int = -32600, message: String) -> JSON {
            ["id": .int(innerID), "error": ["code": .int(code), "message": .string(message)]]
        }
    }
}

/// A strict RFC 8259 parser into the ordered `JSON` value. Hand-written rather than
/// `JSONSerialization` because the daemon's id rule depends on the literal's type: `1`, `1.0`,
/// `"1"` and `true` must stay distinguishable, which NSNumber bridging blurs on Linux.
enum CodexMonitorJSONParser {
    typealias JSON = OrderedJSON

    static func parse(_ bytes: [UInt8]) -> JSON? {
        var parser = Cursor(bytes: bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.index == bytes.count ? value : nil
    }

    private struct Cursor {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) -> JSON? {
            guard depth < 512 else { return nil }
            skipWhitespace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSON.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        private mutating func literal(_ text: String, _ value: JSON) -> JSON? {
            let expected = Array(text.utf8)
            guard bytes.count - index >= expected.count,
                  Array(bytes[index..<index + expected.count]) == expected
            else { return nil }
            index += expected.count
            return value
        }

        private mutating func object(depth: Int) -> JSON? {
            index += 1
            var members: [OrderedJSON.Member] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = value(depth: depth + 1) else { return nil }
                // Last duplicate wins, as in serde_json's map.
                if let existing = members.firstIndex(where: { $0.key == key }) {
                    members[existing].value = value
                } else {
                    members.append(JSON.Member(key: key, value: value))
                }
                skipWhitespace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                } else {
                    return nil
                }
            }
        }

        private mutating func array(depth: Int) -> JSON? {
            index += 1
            var values: [JSON] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(values)
            }
            while true {
                guard let value = value(depth: depth + 1) else { return nil }
                values.append(value)
                skipWhitespace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(values)
                } else {
                    return nil
                }
            }
        }

        private mutating func string() -> String? {
            index += 1
            var scalars = String.UnicodeScalarView()
            var pendingHigh: UInt32?
            var raw: [UInt8] = []
            func flushRaw() -> Bool {
                guard !raw.isEmpty else { return true }
                guard let text = String(bytes: raw, encoding: .utf8) else { return false }
                scalars.append(contentsOf: text.unicodeScalars)
                raw.removeAll(keepingCapacity: true)
                return true
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    guard pendingHigh == nil, flushRaw() else { return nil }
                    return String(scalars)
                }
                if byte < 0x20 { return nil }
                if byte != UInt8(ascii: "\\") {
                    guard pendingHigh == nil else { return nil }
                    raw.append(byte)
                    index += 1
                    continue
                }
                guard flushRaw(), index + 1 < bytes.count else { return nil }
                let escape = bytes[index + 1]
                index += 2
                if escape == UInt8(ascii: "u") {
                    guard index + 4 <= bytes.count,
                          let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                    else { return nil }
                    index += 4
                    if let high = pendingHigh {
                        guard (0xDC00...0xDFFF).contains(code) else { return nil }
                        pendingHigh = nil
                        guard let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)) else { return nil }
                        scalars.append(scalar)
                    } else if (0xD800...0xDBFF).contains(code) {
                        pendingHigh = code
                    } else {
                        guard let scalar = Unicode.Scalar(code) else { return nil }
                        scalars.append(scalar)
                    }
                    continue
                }
                guard pendingHigh == nil else { return nil }
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                default: return nil
                }
            }
            return nil
        }

        private mutating func number() -> JSON? {
            let start = index
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digitsStart = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            let intDigits = index - digitsStart
            guard intDigits > 0 else { return nil }
            if intDigits > 1, bytes[digitsStart] == UInt8(ascii: "0") { return nil }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                let fraction = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > fraction else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                let exponent = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > exponent else { return nil }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let value = Int(text) { return .int(value) }
            return Double(text).map(JSON.double)
        }
    }
}
