import TetherCore

/// One `[tunnels.NAME]` table: the SSH server a profile's connections are forwarded through.
public struct TunnelConfig: Sendable, Equatable, CustomStringConvertible {
    public static let defaultPort = 22
    public static let defaultKnownHosts = "~/.ssh/known_hosts"
    /// Seconds between SSH keepalives when `keepalive` is not set.
    public static let defaultKeepalive = 30
    /// The keys a tunnel takes, in canonical order.
    public static let keys = [
        "host", "port", "user", "identity", "passphrase", "agent",
        "known_hosts", "trust_on_first_use", "local_port", "keepalive",
    ]

    public let name: String
    public let host: String
    public let port: Int
    public let user: String
    /// Private key path, `~` expanded and absolute. Nil when only the agent is used.
    public let identity: String?
    /// Passphrase of `identity`, if it is encrypted.
    public let passphrase: ConfiguredSecret?
    /// Authenticate with the SSH agent (`$SSH_AUTH_SOCK`).
    public let agent: Bool
    /// known_hosts path, `~` expanded and absolute. Host keys are checked strictly against it.
    public let knownHosts: String
    /// Opt-in: accept and pin an unknown host key on first connection.
    public let trustOnFirstUse: Bool
    /// Loopback port to listen on; nil picks a free one.
    public let localPort: Int?
    /// Seconds between keepalives; 0 turns them off.
    public let keepalive: Int

    public init(
        name: String, host: String, port: Int = TunnelConfig.defaultPort, user: String,
        identity: String?, passphrase: ConfiguredSecret? = nil, agent: Bool = false,
        knownHosts: String, trustOnFirstUse: Bool = false, localPort: Int? = nil,
        keepalive: Int = TunnelConfig.defaultKeepalive
    ) {
        self.name = name
        self.host = host
        self.port = port
        self.user = user
        self.identity = identity
        self.passphrase = passphrase
        self.agent = agent
        self.knownHosts = knownHosts
        self.trustOnFirstUse = trustOnFirstUse
        self.localPort = localPort
        self.keepalive = keepalive
    }

    /// `user@host:port`; secrets never appear.
    public var description: String { "Tunnel(\(name), \(user)@\(HostPort(host: host, port: port)))" }
}
