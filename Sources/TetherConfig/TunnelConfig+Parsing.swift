extension TunnelConfig {
    /// Validates one `[tunnels.NAME]` table.
    init(name: String, table: ConfigTable) throws {
        try table.rejectUnknownKeys(Self.keys, in: "a tunnel")
        let host = try table.requiredString("host", example: "\"vps.example.com\"", why: "the SSH server to connect to")
        let port = try table.integer("port", in: 1...65535, example: "22") ?? Self.defaultPort
        let user = try table.requiredString("user", example: "\"me\"", why: "the user to log in as on the SSH server")
        let identity = try table.localPath("identity", example: "\"~/.ssh/id_ed25519\"")
        let passphrase = try table.secret("passphrase")
        let agent = try table.boolean("agent", example: "true") ?? false
        let knownHosts = try table.localPath("known_hosts", example: "\"~/.ssh/known_hosts\"")
            ?? table.environment.expandingTilde(in: Self.defaultKnownHosts)
        let trustOnFirstUse = try table.boolean("trust_on_first_use", example: "false") ?? false
        let localPort = try table.integer("local_port", in: 1...65535, example: "14096")
        let keepalive = try table.integer("keepalive", in: 0...86_400, example: "30") ?? Self.defaultKeepalive

        guard identity != nil || agent else {
            throw table.error(
                .missingKey, "identity", problem: "the tunnel has no way to authenticate",
                fix: "add identity = \"~/.ssh/id_ed25519\" or agent = true to \(table.header)")
        }
        if passphrase != nil, identity == nil {
            throw table.error(
                .invalidValue, "passphrase", problem: "a passphrase is set but there is no identity (key file) for it",
                fix: "add identity = \"~/.ssh/id_ed25519\" to \(table.header), or remove passphrase")
        }
        self.init(
            name: name, host: host, port: port, user: user, identity: identity, passphrase: passphrase,
            agent: agent, knownHosts: knownHosts, trustOnFirstUse: trustOnFirstUse, localPort: localPort,
            keepalive: keepalive)
    }
}
