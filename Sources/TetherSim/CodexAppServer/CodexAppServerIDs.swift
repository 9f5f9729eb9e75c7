import Foundation

/// The identifiers codex 0.163 puts on the wire: UUIDv7 for threads, turns and user messages
/// (`01a24d2c-66b3-7860-9cfe-d3af1d3236be`: the first 48 bits are the Unix time in milliseconds),
/// `call_` + 8 hex digits for tool calls and `msg_` + 8 hex digits for agent messages.
enum CodexAppServerIDs {
    static func uuidV7(now: Date = Date()) -> String {
        let ms = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        for index in 0..<6 {
            bytes[index] = UInt8((ms >> (8 * UInt64(5 - index))) & 0xFF)
        }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let characters = Array(hex)
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }
        return groups.joined(separator: "-")
    }

    static func callID() -> String { "call_" + hex8() }

    static func messageID() -> String { "msg_" + hex8() }

    /// A random revision as codex stamps `readState`s with (a v4 UUID).
    static func revision() -> String { UUID().uuidString.lowercased() }

    private static func hex8() -> String {
        String(format: "%08x", UInt32.random(in: 0...UInt32.max))
    }

    /// Whether `text` is shaped like a UUID (8-4-4-4-12 hex digits): what codex parses a thread id as.
    static func isUUID(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.map(\.count) == [8, 4, 4, 4, 12] else { return false }
        return parts.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }
}
