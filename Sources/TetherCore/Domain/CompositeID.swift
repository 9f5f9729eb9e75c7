import Foundation

/// Ids a later `tether` process must act on are self-contained: where a backend needs several
/// keys (job + approval, workspace + request), they are joined into one printable token.
/// Components are percent-escaped so that any backend id, even one containing the separator,
/// round-trips.
public enum CompositeID {
    public static let separator: Character = "~"

    public static func join(_ parts: [String]) -> String {
        parts.map(escape).joined(separator: String(separator))
    }

    public static func split(_ id: String, count: Int) -> [String]? {
        let parts = id.split(separator: separator, omittingEmptySubsequences: false).map { unescape(String($0)) }
        guard parts.count == count, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        return parts
    }

    private static func escape(_ part: String) -> String {
        var out = ""
        for character in part {
            switch character {
            case "%": out += "%25"
            case separator: out += "%7E"
            default: out.append(character)
            }
        }
        return out
    }

    private static func unescape(_ part: String) -> String {
        part.replacingOccurrences(of: "%7E", with: "~").replacingOccurrences(of: "%25", with: "%")
    }
}
