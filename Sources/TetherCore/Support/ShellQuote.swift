import Foundation

/// Quotes an argument for a POSIX shell when it needs it: the one rule for every command Tether
/// prints for a person to run (hints, the CLI's and the ACP bridge's "answer with …").
public func shellQuote(_ text: String) -> String {
    let safe = text.allSatisfy { $0.isLetter || $0.isNumber || "-_.:/@%+=,~".contains($0) }
    return safe && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
