import TetherCore

/// Where the gateway listens: `HOST:PORT` (`[::1]:PORT` for IPv6), port 0 picks a free one.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public static let standard = ListenAddress(host: "127.0.0.1", port: 7420)

    /// The address, as the one reader of `host:port` (`HostPort`) parsed it.
    public let address: HostPort
    public var host: String { address.host }
    public var port: Int { address.port }

    public init(host: String, port: Int) {
        address = HostPort(host: host, port: port)
    }

    public init(_ address: HostPort) {
        self.address = address
    }

    /// `HOST:PORT` by the rules of `HostPort(listening:)`: the `--listen` flag and the
    /// `[serve]` table's `listen` accept the same texts.
    public init?(_ text: String) {
        guard let address = HostPort(listening: text) else { return nil }
        self.address = address
    }

    /// Loopback only: 127.0.0.0/8, ::1, localhost. Anything else is reachable from the network.
    public var isLoopback: Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    public var description: String { address.description }

    /// The URL a client uses, with the port actually bound.
    public func url(boundPort: Int) -> String {
        let host = host.contains(":") ? "[\(host)]" : host
        return "http://\(host):\(boundPort)"
    }
}
