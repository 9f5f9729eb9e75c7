/// The top level of one line from the daemon, read without building any of its values: enough
/// for the RPC reader to tell a notification (queued as bytes, parsed by the consumer) from
/// everything else (parsed at once: responses must reach their calls).
///
/// It only looks at the top-level keys. A line it cannot vouch for — not an object, a key with
/// an escape, `method` or `id` twice, bytes after the object — is `.other`, and the reader
/// parses it fully, so a wrong guess can only cost a parse, never misroute a response. It does
/// not validate the values: a malformed notification is found (and logged) when it is parsed.
enum CodexMonitorEnvelope: Equatable {
    /// A JSON object with a string `method` and no `id` (or `"id": null`).
    case notification
    /// Anything else: parse it to know.
    case other

    static func of(_ line: [UInt8]) -> CodexMonitorEnvelope {
        var scanner = Scanner(bytes: line)
        return scanner.envelope()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        mutating func envelope() -> CodexMonitorEnvelope {
            skipSpace()
            guard take(.openBrace) else { return .other }
            var method: Bool?  // seen; whether its value is a string
            var id: Bool?  // seen; whether its value is null
            skipSpace()
            if !take(.closeBrace) {
                while true {
                    skipSpace()
                    guard let key = readKey() else { return .other }
                    skipSpace()
                    guard take(.colon) else { return .other }
                    skipSpace()
                    let start = index
                    guard skipValue() else { return .other }
                    if key == .method {
                        guard method == nil else { return .other }
                        method = bytes[start] == .quote
                    } else if key == .id {
                        guard id == nil else { return .other }
                        id = isNull(start..<index)
                    }
                    skipSpace()
                    if take(.comma) { continue }
                    guard take(.closeBrace) else { return .other }
                    break
                }
            }
            skipSpace()
            guard index == bytes.count else { return .other }
            return method == true && id != false ? .notification : .other
        }

        private enum Key { case method, id, other }

        /// A key without escapes (one with an escape cannot be vouched for: nil).
        private mutating func readKey() -> Key? {
            guard take(.quote) else { return nil }
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case .backslash: return nil
                case .quote:
                    let key = bytes[start..<index]
                    index += 1
                    if key.elementsEqual("method".utf8) { return .method }
                    if key.elementsEqual("id".utf8) { return .id }
                    return .other
                default: index += 1
                }
            }
            return nil
        }

        /// Steps over one value: a string, an object or array (brackets counted outside strings),
        /// or a scalar (up to the next delimiter). False when the line ends inside it.
        private mutating func skipValue() -> Bool {
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case .quote:
                return skipString()
            case .openBrace, .openBracket:
                var depth = 0
                while index < bytes.count {
                    switch bytes[index] {
                    case .quote:
                        guard skipString() else { return false }
                        continue
                    case .openBrace, .openBracket:
                        depth += 1
                    case .closeBrace, .closeBracket:
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            return true
                        }
                    default:
                        break
                    }
                    index += 1
                }
                return false
            default:
                let start = index
                while index < bytes.count, !Self.endsScalar(bytes[index]) { index += 1 }
                return index > start
            }
        }

        /// From an opening quote to just past its closing one.
        private mutating func skipString() -> Bool {
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case .backslash: index += 2
                case .quote:
                    index += 1
                    return true
                default: index += 1
                }
            }
            return false
        }

        private func isNull(_ range: Range<Int>) -> Bool {
            bytes[range].elementsEqual("null".utf8)
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipSpace() {
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        }

        private static func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }

        private static func endsScalar(_ byte: UInt8) -> Bool {
            byte == .comma || byte == .closeBrace || byte == .closeBracket || isSpace(byte)
        }
    }
}

extension UInt8 {
    fileprivate static let quote = UInt8(ascii: "\"")
    fileprivate static let backslash = UInt8(ascii: "\\")
    fileprivate static let openBrace = UInt8(ascii: "{")
    fileprivate static let closeBrace = UInt8(ascii: "}")
    fileprivate static let openBracket = UInt8(ascii: "[")
    fileprivate static let closeBracket = UInt8(ascii: "]")
    fileprivate static let colon = UInt8(ascii: ":")
    fileprivate static let comma = UInt8(ascii: ",")
}
