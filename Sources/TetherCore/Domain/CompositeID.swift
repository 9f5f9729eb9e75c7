/// Ids a later `tether` process must act on are self-contained: where a backend needs several
/// keys (job + approval, workspace + request), they are joined into one printable token.
/// Components are percent-escaped so that any backend id, even one containing the separator,
/// round-trips.
///
/// Joining and splitting work on UTF-8 bytes, not characters: a session id is joined for every
/// event of a stream, and a `~` followed by a combining mark is still a `~` byte (as a
/// character it would hide inside the mark's grapheme and never be escaped or split on).
public enum CompositeID {
    public static let separator: Character = "~"
    private static let separatorByte = UInt8(ascii: "~")
    private static let percentByte = UInt8(ascii: "%")

    public static func join(_ parts: [String]) -> String {
        guard parts.allSatisfy({ !needsEscaping($0) }) else {
            return parts.map(escape).joined(separator: String(separator))
        }
        // The common case, ids without `%` or `~`: one allocation at the final size.
        var joined = ""
        joined.reserveCapacity(parts.reduce(parts.count) { $0 + $1.utf8.count })
        for (index, part) in parts.enumerated() {
            if index > 0 { joined.append(separator) }
            joined.append(part)
        }
        return joined
    }

    /// Every part of `id`, unescaped (one part for an id that is not composite).
    public static func parts(_ id: String) -> [String] {
        id.utf8.split(separator: separatorByte, omittingEmptySubsequences: false)
            .map { unescape(String(decoding: $0, as: UTF8.self)) }
    }

    /// Whether `id`, or a part of it, is a dot segment (`.` or `..`) that would name another
    /// route once put in a URL path.
    public static func hasDotSegment(_ id: String) -> Bool {
        parts(id).contains { $0 == "." || $0 == ".." }
    }

    public static func split(_ id: String, count: Int) -> [String]? {
        let parts = parts(id)
        guard parts.count == count, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        return parts
    }

    private static func needsEscaping(_ part: String) -> Bool {
        part.utf8.contains { $0 == separatorByte || $0 == percentByte }
    }

    private static func escape(_ part: String) -> String {
        guard needsEscaping(part) else { return part }
        var out: [UInt8] = []
        out.reserveCapacity(part.utf8.count + 8)
        for byte in part.utf8 {
            switch byte {
            case percentByte: out += Array("%25".utf8)
            case separatorByte: out += Array("%7E".utf8)
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `%7E` → `~` and `%25` → `%`, in one pass (so `%257E` is `%7E`, as it was escaped).
    private static func unescape(_ part: String) -> String {
        guard part.utf8.contains(percentByte) else { return part }
        let bytes = Array(part.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == percentByte, index + 2 < bytes.count {
                let code = (bytes[index + 1], bytes[index + 2])
                if code == (UInt8(ascii: "7"), UInt8(ascii: "E")) { out.append(separatorByte); index += 3; continue }
                if code == (UInt8(ascii: "2"), UInt8(ascii: "5")) { out.append(percentByte); index += 3; continue }
            }
            out.append(bytes[index])
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
