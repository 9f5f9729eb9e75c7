import TOMLKit

/// A parsed TOML value as plain Swift data.
///
/// TOMLKit's tables are non-`Sendable` classes over C++ nodes; converting once, right after
/// parsing, keeps TOMLKit confined to `ConfigFile.parse` and lets validation be ordinary Swift.
indirect enum ConfigValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    case table([String: ConfigValue])
    case array([ConfigValue])
    /// A type no Tether key takes (array, date, …): kept only to name it in errors.
    case other(typeName: String)

    init(_ value: any TOMLValueConvertible) {
        switch value.type {
        case .string: self = .string(value.string ?? "")
        case .int: self = .integer(value.int ?? 0)
        case .double: self = .float(value.double ?? 0)
        case .bool: self = .boolean(value.bool ?? false)
        case .table: self = .table(value.table.map(Self.entries(of:)) ?? [:])
        case .array: self = .array(value.array.map { $0.map(ConfigValue.init) } ?? [])
        case let type: self = .other(typeName: type.description)
        }
    }

    static func entries(of table: TOMLTable) -> [String: ConfigValue] {
        var entries: [String: ConfigValue] = [:]
        for (key, value) in table { entries[key] = ConfigValue(value) }
        return entries
    }

    /// The type as a user reads it in an error message ("a string", "an integer", …).
    var typeName: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a floating-point number"
        case .boolean: return "a boolean"
        case .table: return "a table"
        case .array: return "an array"
        case .other(let name): return name.first.map { "aeiou".contains($0) } == true ? "an \(name)" : "a \(name)"
        }
    }
}
