/// Where the gateway listens: `HOST:PORT` (`[::1]:PORT` for IPv6), port 0 picks a free one.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public static let standard = ListenAddress(host: "127.0.0.1", port: 7420)

    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public init?(_ text: String) {
        var hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        hostPart = hostPart.isEmpty ? "127.0.0.1" : hostPart
        guard let port = Int(portPart), (0...65535).contains(port), !hostPart.contains(":") || text.hasPrefix("[") else { return nil }
        self.init(host: String(hostPart), port: port)
    }

    /// Loopback only: 127.0.0.0/8, ::1, localhost. Anything else is reachable from the network.
    public var isLoopback: Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The URL a client uses, with the port actually bound.
    public func url(boundPort: Int) -> String {
        let host = host.contains(":") ? "[\(host)]" : host
        return "http://\(host):\(boundPort)"
    }
}
