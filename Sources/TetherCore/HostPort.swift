/// A `host:port` endpoint (`[v6addr]:port` for IPv6): a codexmonitor profile's `address`, or
/// where `tether serve` and `tether simulate` listen. The one reader of that syntax: a config
/// key and a flag that take an address accept and refuse the same texts.
public struct HostPort: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// An address to connect to: `host:port` or `[ipv6]:port`, the host non-empty, the port
    /// 1–65535. Nil otherwise.
    public init?(parsing text: String) {
        guard let (host, port) = Self.split(text), !host.isEmpty, port != 0 else { return nil }
        self.init(host: host, port: port)
    }

    /// An address to listen on: as `init(parsing:)`, but port 0 asks the system for a free one
    /// and an empty host (`:7420`) is loopback, 127.0.0.1. Nil otherwise.
    public init?(listening text: String) {
        guard let (host, port) = Self.split(text) else { return nil }
        self.init(host: host.isEmpty ? "127.0.0.1" : host, port: port)
    }

    /// A request's authority (an HTTP `Host` header): `host:port`, `[ipv6]:port`, or either
    /// without its port (or with an empty one), which is then `defaultPort`. Nil if malformed, or if there is no port
    /// and no default.
    public init?(authority text: String, defaultPort: Int?) {
        // An empty port (`host:`) is no port (RFC 3986 §3.2.3).
        let text = text.hasSuffix(":") && !text.hasSuffix("::") ? String(text.dropLast()) : text
        if let parsed = HostPort(parsing: text) {
            self = parsed
        } else if let defaultPort, let parsed = HostPort(parsing: "\(text):\(defaultPort)") {
            self = parsed
        } else {
            return nil
        }
    }

    /// The host (maybe empty) and the port (0–65535) of `host:port` or `[ipv6]:port`. An IPv6
    /// address must be bracketed; the port is ASCII digits alone (no sign, no spaces).
    private static func split(_ text: String) -> (host: String, port: Int)? {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            guard !host.isEmpty else { return nil }
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "[" || $0 == "]" }),
              !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(portText), port <= 65535
        else { return nil }
        return (String(host), port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
