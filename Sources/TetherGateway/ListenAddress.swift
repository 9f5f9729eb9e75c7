import Foundation
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

    /// Loopback only: an address literal in 127.0.0.0/8 or `::1` (or `::ffff:127.x.y.z`), or
    /// `localhost`. A name is judged by what it is, not how it starts: `127.attacker.example` is
    /// a name that DNS may point anywhere, so it is not loopback.
    public var isLoopback: Bool {
        let host = host.lowercased()
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        let bytes = Mirror(reflecting: v6.__in6_u.__u6_addr8).children.compactMap { $0.value as? UInt8 }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        // An IPv4-mapped address (::ffff:a.b.c.d) is loopback when its IPv4 part is.
        return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
    }

    public var description: String { address.description }

    /// The URL a client uses, with the port actually bound.
    public func url(boundPort: Int) -> String {
        let host = host.contains(":") ? "[\(host)]" : host
        return "http://\(host):\(boundPort)"
    }
}
