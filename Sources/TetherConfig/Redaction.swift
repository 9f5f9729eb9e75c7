/// A config value as `profiles show` may print it: secrets replaced by their reference or a mask.
public enum RedactedValue: Sendable, Equatable, Encodable, CustomStringConvertible {
    case string(String)
    case integer(Int)
    case boolean(Bool)
    /// A duration, written in seconds (`0.25`, `30`).
    case seconds(Duration)
    /// A secret: encodes as `{"env": NAME}`, `{"file": PATH}` or `"••••••"`, never its value.
    case secret(SecretReference)

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .integer(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .boolean(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .seconds(let value):
            var container = encoder.singleValueContainer()
            try container.encode(Self.secondsValue(value))
        case .secret(.literal):
            var container = encoder.singleValueContainer()
            try container.encode(SecretReference.mask)
        case .secret(.environment(let variable)):
            var container = encoder.container(keyedBy: FieldKey.self)
            try container.encode(variable, forKey: FieldKey("env"))
        case .secret(.file(let path)):
            var container = encoder.container(keyedBy: FieldKey.self)
            try container.encode(path, forKey: FieldKey("file"))
        }
    }

    /// The TOML form.
    public var description: String {
        switch self {
        case .string(let value): return TOMLText.quoted(value)
        case .integer(let value): return String(value)
        case .boolean(let value): return String(value)
        case .seconds(let value):
            let seconds = Self.secondsValue(value)
            return seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
        case .secret(let reference): return reference.redacted
        }
    }

    static func secondsValue(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// One `key = value` line of a redacted table, in canonical key order.
public struct RedactedField: Sendable, Equatable {
    public let key: String
    public let value: RedactedValue

    public init(_ key: String, _ value: RedactedValue) {
        self.key = key
        self.value = value
    }
}

/// `tether profiles show NAME`: the profile (and its tunnel) with every secret redacted.
///
/// JSON: `{"name", "backend", "endpoint", "tunnel", "default", "settings": {…}, "tunnel_settings": {…} | null}`,
/// snake_case keys as in the config file. `toml` renders the same as a TOML fragment.
public struct RedactedProfile: Sendable, Equatable, Encodable {
    public let summary: ProfileSummary
    /// The profile's keys except `tunnel`, `backend` first; defaults filled in, absent optionals left out.
    public let settings: [RedactedField]
    /// The tunnel's keys, defaults filled in; nil for a direct profile.
    public let tunnelSettings: [RedactedField]?

    public init(summary: ProfileSummary, settings: [RedactedField], tunnelSettings: [RedactedField]?) {
        self.summary = summary
        self.settings = settings
        self.tunnelSettings = tunnelSettings
    }

    enum CodingKeys: String, CodingKey {
        case name, backend, endpoint, tunnel, settings
        case isDefault = "default"
        case tunnelSettings = "tunnel_settings"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(summary.name, forKey: .name)
        try container.encode(summary.backend, forKey: .backend)
        try container.encode(summary.endpoint, forKey: .endpoint)
        try container.encode(summary.tunnel, forKey: .tunnel)
        try container.encode(summary.isDefault, forKey: .isDefault)
        try container.encode(Fields(settings), forKey: .settings)
        try container.encode(tunnelSettings.map(Fields.init), forKey: .tunnelSettings)
    }

    /// The profile as a TOML fragment, e.g. `[profiles.home]` then `[tunnels.vps]`.
    public var toml: String {
        var lines = ["[profiles.\(TOMLText.key(summary.name))]"]
        lines += settings.map { "\(TOMLText.key($0.key)) = \($0.value)" }
        if let tunnel = summary.tunnel {
            lines.append("tunnel = \(TOMLText.quoted(tunnel))")
            if let tunnelSettings {
                lines += ["", "[tunnels.\(TOMLText.key(tunnel))]"]
                lines += tunnelSettings.map { "\(TOMLText.key($0.key)) = \($0.value)" }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Encodes fields as a JSON object in their order.
    private struct Fields: Encodable {
        let fields: [RedactedField]
        init(_ fields: [RedactedField]) { self.fields = fields }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: FieldKey.self)
            for field in fields { try container.encode(field.value, forKey: FieldKey(field.key)) }
        }
    }
}

/// A coding key named at run time.
struct FieldKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Renders profiles for display with every secret redacted.
public enum Redaction {
    /// The redacted view of `profile`, including its tunnel from `config`.
    public static func redact(_ profile: Profile, in config: ConfigFile) -> RedactedProfile {
        let summary = ProfileSummary(name: profile.name, backend: profile.backend, endpoint: profile.endpoint,
                                     tunnel: profile.tunnel, isDefault: profile.name == config.defaultProfile)
        return RedactedProfile(
            summary: summary,
            settings: [RedactedField("backend", .string(profile.backend.rawValue))] + fields(of: profile.settings)
                + profile.connection.redactedFields,
            tunnelSettings: config.tunnel(for: profile).map(fields(of:)))
    }

    static func fields(of settings: BackendSettings) -> [RedactedField] {
        var fields: [RedactedField] = []
        func add(_ key: String, _ value: RedactedValue?) { if let value { fields.append(RedactedField(key, value)) } }
        switch settings {
        case .codexWorker(let s):
            add("url", .string(s.url.absoluteString))
            add("token", s.token.map { .secret($0.reference) })
        case .openCode(let s):
            add("url", .string(s.url.absoluteString))
            add("username", .string(s.username))
            add("password", s.password.map { .secret($0.reference) })
            add("directory", s.directory.map(RedactedValue.string))
        case .codex(let s):
            switch s.reach {
            case .webSocket(let url): add("url", .string(url.absoluteString))
            case .daemon(let socket):
                add("daemon", .boolean(true))
                add("socket", socket.map(RedactedValue.string))
            case .command(let argv): add("command", .string(argv.joined(separator: " ")))
            }
            add("token", s.token.map { .secret($0.reference) })
            if s.codex != "codex" { add("codex", .string(s.codex)) }
            add("directory", s.directory.map(RedactedValue.string))
        case .codexMonitor(let s):
            add("address", .string(s.address.description))
            add("token", s.token.map { .secret($0.reference) })
            add("workspace", s.workspace.map(RedactedValue.string))
        case .notification(let s):
            add("url", .string(s.url.absoluteString))
            add("peer_id", s.peerID.map(RedactedValue.string))
            add("desktop", s.desktop.map(RedactedValue.string))
        case .gateway(let s):
            add("url", .string(s.url.absoluteString))
            add("token", s.token.map { .secret($0.reference) })
            add("remote_profile", s.remoteProfile.map(RedactedValue.string))
        }
        return fields
    }

    static func fields(of tunnel: TunnelConfig) -> [RedactedField] {
        var fields: [RedactedField] = [
            RedactedField("host", .string(tunnel.host)),
            RedactedField("port", .integer(tunnel.port)),
            RedactedField("user", .string(tunnel.user)),
        ]
        if let identity = tunnel.identity { fields.append(RedactedField("identity", .string(identity))) }
        if let passphrase = tunnel.passphrase { fields.append(RedactedField("passphrase", .secret(passphrase.reference))) }
        fields += [
            RedactedField("agent", .boolean(tunnel.agent)),
            RedactedField("known_hosts", .string(tunnel.knownHosts)),
            RedactedField("trust_on_first_use", .boolean(tunnel.trustOnFirstUse)),
        ]
        if let localPort = tunnel.localPort { fields.append(RedactedField("local_port", .integer(localPort))) }
        fields.append(RedactedField("keepalive", .integer(tunnel.keepalive)))
        return fields
    }
}

extension ConfigFile {
    /// `profiles show NAME`. - Throws: `ConfigError` (`.profileNotFound`) for an unknown name.
    public func redactedProfile(named name: String) throws -> RedactedProfile {
        Redaction.redact(try profile(named: name), in: self)
    }
}
