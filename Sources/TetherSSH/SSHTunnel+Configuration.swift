extension SSHTunnel {
    /// Everything one tunnel needs, as plain values (the CLI maps a config-file tunnel onto it).
    public struct Configuration: Sendable, CustomStringConvertible {
        /// The SSH server.
        public var host: String
        public var port: Int
        public var user: String
        /// Private key file (OpenSSH ed25519 or ecdsa); nil when only the agent is used.
        public var identityPath: String?
        /// Passphrase of `identityPath`, if it is encrypted. Never logged nor put in an error.
        public var passphrase: String?
        /// Try the SSH agent's keys first.
        public var useAgent: Bool
        /// The agent's socket; nil means `$SSH_AUTH_SOCK`.
        public var agentSocketPath: String?
        /// OpenSSH known_hosts file checked strictly (a missing file is an empty one).
        public var knownHostsPath: String
        /// Accept an unknown host key once and pin it in `pinStorePath`.
        public var trustOnFirstUse: Bool
        /// Where pinned host keys live, in known_hosts format; nil disables pinning.
        public var pinStorePath: String?
        /// Loopback port to listen on; nil picks a free one.
        public var localPort: Int?
        /// Seconds between SSH keepalives; 0 turns them off.
        public var keepalive: Int
        /// Where each forwarded connection goes, as the SSH server sees it.
        public var targetHost: String
        public var targetPort: Int
        /// Instead of a TCP target: each local connection runs this command on the server (an
        /// exec channel), its stdin and stdout being the connection's bytes (`codex app-server
        /// proxy`, say). `targetHost`/`targetPort` are then unused.
        public var targetCommand: String?
        /// Seconds allowed for TCP connect, handshake and authentication together.
        public var connectTimeout: Int

        public init(
            host: String, port: Int = 22, user: String,
            identityPath: String? = nil, passphrase: String? = nil,
            useAgent: Bool = false, agentSocketPath: String? = nil,
            knownHostsPath: String, trustOnFirstUse: Bool = false, pinStorePath: String? = nil,
            localPort: Int? = nil, keepalive: Int = 30,
            targetHost: String, targetPort: Int, targetCommand: String? = nil,
            connectTimeout: Int = 20
        ) {
            self.host = host
            self.port = port
            self.user = user
            self.identityPath = identityPath
            self.passphrase = passphrase
            self.useAgent = useAgent
            self.agentSocketPath = agentSocketPath
            self.knownHostsPath = knownHostsPath
            self.trustOnFirstUse = trustOnFirstUse
            self.pinStorePath = pinStorePath
            self.localPort = localPort
            self.keepalive = keepalive
            self.targetHost = targetHost
            self.targetPort = targetPort
            self.targetCommand = targetCommand
            self.connectTimeout = connectTimeout
        }

        /// `user@host:port -> target`; the passphrase never appears.
        public var description: String {
            "SSHTunnel(\(user)@\(Self.format(host, port)) -> \(target))"
        }

        /// Where a connection goes: `host:port`, or `exec: COMMAND`.
        var target: String {
            targetCommand.map { "exec: " + $0 } ?? Self.format(targetHost, targetPort)
        }

        /// The server as OpenSSH names it: `host` on port 22, `[host]:port` otherwise.
        var serverName: String { "\(user)@\(Self.format(host, port))" }

        static func format(_ host: String, _ port: Int) -> String {
            host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }

        func validate() throws(SSHError) {
            func bad(_ text: String) -> SSHError { SSHError(.invalidConfiguration, "tunnel \(serverName): \(text)") }
            if host.isEmpty { throw bad("host is empty; set `host` to the SSH server's name or address") }
            if user.isEmpty { throw bad("user is empty; set `user` to the login name on the SSH server") }
            if !(1...65535).contains(port) { throw bad("port \(port) is out of range 1-65535") }
            if let targetCommand {
                if targetCommand.trimmingCharacters(in: .whitespaces).isEmpty { throw bad("the command to run is empty") }
            } else if !(1...65535).contains(targetPort) {
                throw bad("target port \(targetPort) is out of range 1-65535; check the profile's url or address")
            }
            if targetCommand == nil, targetHost.isEmpty { throw bad("target host is empty; check the profile's url or address") }
            if let localPort, !(0...65535).contains(localPort) {
                throw bad("local_port \(localPort) is out of range 0-65535")
            }
            if connectTimeout <= 0 { throw bad("connect timeout \(connectTimeout) must be at least one second") }
            if keepalive < 0 { throw bad("keepalive \(keepalive) is negative; use 0 to turn keepalives off") }
            if identityPath == nil && !useAgent {
                throw bad("nothing to authenticate with; set `identity` to a private key file or `agent = true`")
            }
            if trustOnFirstUse && pinStorePath == nil {
                throw bad("trust_on_first_use needs a pin store path")
            }
        }
    }
}
