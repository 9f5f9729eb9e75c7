import Foundation
import TetherCore
import TetherStreaming

/// `notifications settings --set KEY=VALUE…` read into an `updateSettings` call. Keys are the
/// snake_case names `settings` prints (camelCase wire names are accepted too); values are
/// checked here so a typo fails before anything is sent.
struct NotificationSettingsChange: Sendable, Equatable {
    /// What was asked, normalized, in the printed (snake_case) names and order.
    var values: JSONObject

    private enum Kind { case flag, time }
    /// Printed name → (wire name, kind). `vibration_enabled` is not in the contract's
    /// `updateSettings`, but the desktop merges it.
    private static let keys: [(name: String, wire: String, kind: Kind)] = [
        ("enabled", "enabled", .flag),
        ("sound_enabled", "soundEnabled", .flag),
        ("vibration_enabled", "vibrationEnabled", .flag),
        ("quiet_hours_enabled", "quietHoursEnabled", .flag),
        ("quiet_hours_start", "quietHoursStart", .time),
        ("quiet_hours_end", "quietHoursEnd", .time),
    ]

    static var settableNames: String { keys.map(\.name).joined(separator: ", ") }

    init(_ assignments: [String: String]) throws(TetherError) {
        var values = JSONObject()
        for (rawKey, rawValue) in assignments.sorted(by: { $0.key < $1.key }) {
            let folded = rawKey.lowercased().replacingOccurrences(of: "-", with: "_")
            guard let key = Self.keys.first(where: { $0.name == folded || $0.wire.lowercased() == folded }) else {
                throw TetherError(.usage, "unknown notification setting \"\(rawKey)\"",
                                  hint: "settable: \(Self.settableNames)")
            }
            let value = rawValue.trimmingCharacters(in: .whitespaces)
            switch key.kind {
            case .flag:
                guard let flag = Self.flag(value) else {
                    throw TetherError(.usage, "\(key.name) takes true or false, got \"\(rawValue)\"")
                }
                values[key.name] = .bool(flag)
            case .time:
                guard let time = Self.time(value) else {
                    throw TetherError(.usage, "\(key.name) takes a time HH:MM (24 h), got \"\(rawValue)\"")
                }
                values[key.name] = .string(time)
            }
        }
        self.values = Self.keys.reduce(into: JSONObject()) { ordered, key in
            if let value = values[key.name] { ordered[key.name] = value }
        }
    }

    /// The `updateSettings` params: the contract's flat keys, and — because the desktop reads
    /// only a nested `quietHours{enabled,start,end}` and ignores the flat ones — the quiet-hours
    /// values nested as well.
    var params: JSONObject {
        var params = JSONObject()
        var quiet = JSONObject()
        for key in Self.keys {
            guard let value = values[key.name] else { continue }
            params[key.wire] = value
            switch key.name {
            case "quiet_hours_enabled": quiet["enabled"] = value
            case "quiet_hours_start": quiet["start"] = value
            case "quiet_hours_end": quiet["end"] = value
            default: break
            }
        }
        if !quiet.isEmpty { params["quietHours"] = .object(quiet) }
        return params
    }

    private static func flag(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }

    /// `H:MM` or `HH:MM`, normalized to `HH:MM` (the desktop compares strings).
    private static func time(_ text: String) -> String? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
    }
}
