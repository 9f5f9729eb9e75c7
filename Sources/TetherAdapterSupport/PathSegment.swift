import TetherCore

/// One id as one segment of a backend's URL path. Ids come from users, scripts and the
/// gateway's clients, and the request carries the backend's credentials: an id must never
/// reach another route. So every byte but RFC 3986's unreserved ones is percent-encoded (`/`,
/// `?`, `#` and `%` included: `%2e%2e%2f` stays literal), and the two ids that are dot segments
/// once decoded (`.` and `..`, which libcurl and servers remove) are refused, as is an empty one.
public struct PathSegment: Sendable, Equatable, CustomStringConvertible {
    /// The encoded segment, ready to put between two `/`.
    public let encoded: String

    /// - Throws: `TetherError(.usage)` for an empty id, `.` or `..`.
    public init(_ id: String, what: String = "id") throws(TetherError) {
        guard !id.isEmpty else {
            throw TetherError(.usage, "the \(what) is empty", hint: "pass the \(what) as the backend gave it")
        }
        guard id != ".", id != ".." else {
            throw TetherError(.usage, "\"\(id)\" is not a valid \(what)",
                              hint: "an id names one thing; \".\" and \"..\" would name another route of the backend")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(id.utf8.count)
        for byte in id.utf8 {
            if Self.isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            }
        }
        encoded = String(decoding: bytes, as: UTF8.self)
    }

    public var description: String { encoded }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// RFC 3986 §2.3: ALPHA / DIGIT / "-" / "." / "_" / "~".
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
