import TetherCore
extension Profile {
    static let commonKeys = ["backend", "tunnel"]

    /// Validates one `[profiles.NAME]` table; `tunnels` are the names a `tunnel = …` may refer to.
    init(name: String, table: ConfigTable, tunnels: [String]) throws {
        let valid = BackendKind.allCases.map(\.rawValue)
        guard let backendName = try table.string("backend", example: "\"opencode\"") else {
            throw table.error(
                .missingKey, "backend", problem: "missing: every profile needs a backend (one of \(valid.joined(separator: ", ")))",
                fix: "add backend = \"opencode\" (or another of: \(valid.joined(separator: ", "))) to \(table.header)")
        }
        guard let backend = BackendKind(rawValue: backendName) else {
            throw table.error(
                .unknownBackend, "backend",
                problem: "unknown backend \"\(backendName)\"\(KeySuggestion.hint(for: backendName, among: valid))",
                fix: "use one of: \(valid.joined(separator: ", "))")
        }
        try table.rejectUnknownKeys(Self.commonKeys + backend.settingKeys + ConnectionTuning.keys, in: "\(backend.article) \(backend) profile") { key in
            let owners = BackendKind.allCases.filter { $0 != backend && $0.settingKeys.contains(key) }
            return owners.isEmpty ? nil : "a key of \(owners.map(\.rawValue).joined(separator: " and ")) profiles"
        }

        let tunnel = try table.string("tunnel", example: "\"vps\"")
        if let tunnel, !tunnels.contains(tunnel) {
            let defined = tunnels.isEmpty ? "no tunnels are defined" : "defined tunnels: \(tunnels.joined(separator: ", "))"
            throw table.error(
                .unknownTunnel, "tunnel",
                problem: "no [tunnels.\(TOMLText.key(tunnel))] for tunnel = \"\(tunnel)\" (\(defined))\(KeySuggestion.hint(for: tunnel, among: tunnels))",
                fix: "add a [tunnels.\(TOMLText.key(tunnel))] table with host, user and identity, or fix the name, or remove tunnel")
        }

        let settings: BackendSettings
        switch backend {
        case .codexWorker:
            let example = "\"http://127.0.0.1:8787\""
            guard let url = try table.url("url", schemes: ["http", "https"], example: example) else {
                throw table.missing("url", example: example, why: "the Codex Worker's http:// or https:// URL")
            }
            settings = .codexWorker(CodexWorkerSettings(url: url, token: try table.secret("token")))
        case .openCode:
            let example = "\"http://127.0.0.1:4096\""
            guard let url = try table.url("url", schemes: ["http", "https"], example: example) else {
                throw table.missing("url", example: example, why: "the OpenCode server's http:// or https:// URL")
            }
            settings = .openCode(OpenCodeSettings(
                url: url,
                username: try table.string("username", example: "\"opencode\"") ?? OpenCodeSettings.defaultUsername,
                password: try table.secret("password"),
                directory: try table.string("directory", example: "\"/home/me/project\"")))
        case .codex:
            settings = .codex(try CodexAppServerSettings(table: table))
        case .codexMonitor:
            let example = "\"127.0.0.1:4732\""
            guard let text = try table.string("address", example: example) else {
                throw table.missing("address", example: example, why: "the CodexMonitor daemon's host:port")
            }
            guard let address = HostPort(parsing: text) else {
                throw table.invalid("address", "\"\(text)\" is not host:port with a port in 1–65535", example: example)
            }
            settings = .codexMonitor(CodexMonitorSettings(
                address: address, token: try table.secret("token"),
                workspace: try table.string("workspace", example: "\"WORKSPACE_ID\"")))
        case .notification:
            let example = "\"wss://signaling.example.com\""
            guard let url = try table.url("url", schemes: ["ws", "wss"], example: example) else {
                throw table.missing("url", example: example, why: "the signaling relay's ws:// or wss:// URL")
            }
            settings = .notification(NotificationSettings(
                url: url, peerID: try table.string("peer_id", example: "\"tether-laptop\""),
                desktop: try table.string("desktop", example: "\"DESKTOP_PEER_ID\"")))
        case .gateway:
            let example = "\"http://127.0.0.1:8790\""
            guard let url = try table.url("url", schemes: ["http", "https"], example: example) else {
                throw table.missing("url", example: example, why: "the gateway's http:// or https:// URL (`tether serve --listen`)")
            }
            let remoteProfile = try table.string("remote_profile", example: "\"work\"")
            if let remoteProfile, remoteProfile.isEmpty || CompositeID.hasDotSegment(remoteProfile) {
                throw table.invalid("remote_profile", "\"\(remoteProfile)\" is not a profile name", example: "\"work\"")
            }
            settings = .gateway(GatewaySettings(url: url, token: try table.secret("token"), remoteProfile: remoteProfile))
        }
        self.init(name: name, tunnel: tunnel, settings: settings, connection: try ConnectionTuning(table: table), file: table.file)
    }
}
