import Foundation

/// A JSON value whose objects keep their keys in insertion order (named apart from the other
/// simulators' own `JSON` types, which share this module).
///
/// The simulators build every wire payload with it: the bytes they send are then deterministic and
/// read in the same order as the protocol notes, which makes transcripts and failures easy to diff.
enum OrderedJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([OrderedJSON])
    case object([Member])

    struct Member: Sendable, Equatable {
        var key: String
        var value: OrderedJSON
    }
}

// MARK: - Access

extension OrderedJSON {
    /// Object member lookup; `nil` for a missing key or a non-object. Setting `nil` removes the key.
    subscript(key: String) -> OrderedJSON? {
        get {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.key == key }?.value
        }
        set {
            guard case .object(var members) = self else { return }
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
            self = .object(members)
        }
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var intValue: Int? {
        if case .int(let value) = self { return value }
        return nil
    }

    var arrayValue: [OrderedJSON]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

// MARK: - Literals
// (No `ExpressibleByNilLiteral`: `nil` must keep meaning "absent" in `OrderedJSON?` contexts, e.g. removing a key.)

extension OrderedJSON: ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByStringLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    init(dictionaryLiteral elements: (String, OrderedJSON)...) {
        self = .object(elements.map { Member(key: $0.0, value: $0.1) })
    }

    init(arrayLiteral elements: OrderedJSON...) {
        self = .array(elements)
    }

    init(stringLiteral value: String) {
        self = .string(value)
    }

    init(integerLiteral value: Int) {
        self = .int(value)
    }

    init(floatLiteral value: Double) {
        self = .double(value)
    }

    init(booleanLiteral value: Bool) {
        self = .bool(value)
    }
}

// MARK: - Serialization

extension OrderedJSON {
    /// Compact serialization: no whitespace, no raw newlines, so one value is always one SSE `data:` line.
    var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    var data: Data {
        Data(serialized.utf8)
    }

    private func write(to out: inout String) {
        switch self {
        case .null:
            out += "null"
        case .bool(let value):
            out += value ? "true" : "false"
        case .int(let value):
            out += String(value)
        case .double(let value):
            if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
                out += String(Int(value))
            } else if value.isFinite {
                out += "\(value)"
            } else {
                out += "null"
            }
        case .string(let value):
            OrderedJSON.writeString(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                OrderedJSON.writeString(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ value: String, to out: inout String) {
        out += "\""
        // Most strings need no escape: copy them whole. (0xE2 leads U+2028/U+2029.)
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0xE2 }) {
            out += value
            out += "\""
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
