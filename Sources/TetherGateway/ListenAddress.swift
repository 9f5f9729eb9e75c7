import TetherCore

/// Where the gateway listens: `HOST:PORT` (`[::1]:PORT` for IPv6), port 0 picks a free one.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public static let standard = ListenAddress(host: "127.0.0.1", port: 7420)

    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT` by the rules of `HostPort(listening:)`, the one reader of addresses: the
    /// `--listen` flag and the `[serve]` table's `listen` accept the same texts.
    public init?(_ text: String) {
        guard let address = HostPort(listening: text) else { return nil }
        self.init(host: address.host, port: address.port)
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
