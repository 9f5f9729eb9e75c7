import Foundation
import TOMLKit

/// A loaded, validated config file: profiles, tunnels and the default profile.
///
/// Loading validates everything (types, unknown keys, URLs, tunnel references, literal-secret
/// permissions) but resolves no secret: `{ env }` and `{ file }` references are read only when the
/// chosen profile resolves them.
public struct ConfigFile: Sendable, Equatable {
    public static let topLevelKeys = ["default_profile", "profiles", "tunnels", "serve"]

    /// The file it was read from.
    public let path: String
    public let defaultProfile: String?
    public let profiles: [String: Profile]
    public let tunnels: [String: TunnelConfig]
    /// The `[serve]` table (`tether serve`), when the file has one.
    public let serve: ServeSettings?

    public init(path: String, defaultProfile: String?, profiles: [String: Profile], tunnels: [String: TunnelConfig],
                serve: ServeSettings? = nil) {
        self.path = path
        self.defaultProfile = defaultProfile
        self.profiles = profiles
        self.tunnels = tunnels
        self.serve = serve
    }

    /// Finds the config file (`--config`, `$TETHER_CONFIG`, XDG, `~/.config`) and loads it.
    /// - Throws: `ConfigError`.
    public static func load(override: String?, environment: ConfigEnvironment) throws -> ConfigFile {
        let location = try ConfigPaths.locate(override: override, environment: environment)
        return try load(path: location.path, environment: environment)
    }

    /// Reads and validates the file at `path`, refusing literal secrets if group or others can read it.
    /// - Throws: `ConfigError`.
    public static func load(path: String, environment: ConfigEnvironment) throws -> ConfigFile {
        let contents: FileAccess.Contents
        do {
            contents = try FileAccess.read(path)
        } catch {
            throw ConfigError(
                .unreadableFile, file: path, key: nil, problem: "cannot read the config file: \(error.reason)",
                fix: "make \(path) a readable file (chmod 600 \(path)), or pass --config with another file")
        }
        guard let text = String(bytes: contents.bytes, encoding: .utf8) else {
            throw ConfigError(
                .unreadableFile, file: path, key: nil, problem: "the config file is not UTF-8 text",
                fix: "save \(path) as UTF-8 (TOML files must be UTF-8)")
        }
        return try parse(text, path: path, fileMode: contents.mode, environment: environment)
    }

    /// Validates TOML text. `path` is used in messages and to anchor relative paths; `fileMode`
    /// (permission bits) enables the literal-secret check; nil skips it (text not from a file).
    /// - Throws: `ConfigError`.
    public static func parse(_ text: String, path: String, fileMode: UInt32?, environment: ConfigEnvironment) throws -> ConfigFile {
        let root: [String: ConfigValue]
        do {
            root = ConfigValue.entries(of: try TOMLTable(string: text))
        } catch let error as TOMLParseError {
            let at = error.source.begin
            throw ConfigError(
                .invalidTOML, file: path, key: "line \(at.line), column \(at.column)",
                problem: "not valid TOML: \(error.description)",
                fix: "correct the TOML syntax at line \(at.line) of \(path) (compare with \(ConfigPaths.examplePath))")
        }
        let top = ConfigTable(entries: root, path: [], file: path, environment: environment)
        try top.rejectUnknownKeys(topLevelKeys, in: "the top level of the config file")

        var tunnels: [String: TunnelConfig] = [:]
        if let table = try top.table("tunnels", example: "[tunnels.vps]") {
            for name in table.entries.keys.sorted() {
                guard let entry = try table.table(name, example: "[tunnels.\(TOMLText.key(name))] with host = …") else { continue }
                tunnels[name] = try TunnelConfig(name: name, table: entry)
            }
        }

        var profiles: [String: Profile] = [:]
        if let table = try top.table("profiles", example: "[profiles.home]") {
            let tunnelNames = tunnels.keys.sorted()
            for name in table.entries.keys.sorted() {
                guard let entry = try table.table(name, example: "[profiles.\(TOMLText.key(name))] with backend = …") else { continue }
                profiles[name] = try Profile(name: name, table: entry, tunnels: tunnelNames)
            }
        }

        let defaultProfile = try top.string("default_profile", example: "\"home\"")
        if let defaultProfile, profiles[defaultProfile] == nil {
            let names = profiles.keys.sorted()
            throw top.error(
                .profileNotFound, "default_profile",
                problem: "default_profile = \"\(defaultProfile)\" names no [profiles.\(TOMLText.key(defaultProfile))] (\(Self.listing(names)))"
                    + KeySuggestion.hint(for: defaultProfile, among: names),
                fix: names.isEmpty ? "add a [profiles.\(TOMLText.key(defaultProfile))] table, or remove default_profile"
                    : "set default_profile to one of: \(names.joined(separator: ", "))")
        }

        let serve = try top.table("serve", example: "[serve]").map(ServeSettings.init(table:))
        let config = ConfigFile(path: path, defaultProfile: defaultProfile, profiles: profiles, tunnels: tunnels, serve: serve)
        if let fileMode, fileMode & 0o077 != 0,
           let literal = config.allSecrets.first(where: { $0.reference.isLiteral })
        {
            throw ConfigError(
                .insecureLiteralSecret, file: path, key: literal.key,
                problem: "a literal secret is stored in a file that group or others can read (mode \(String(fileMode, radix: 8)))",
                fix: "chmod 600 \(path), or use \(literal.key) = { env = \"NAME\" } (or { file = \"PATH\" }) instead of a literal")
        }
        return config
    }

    /// Every configured secret, profiles then tunnels, each in name order.
    public var allSecrets: [ConfiguredSecret] {
        profiles.keys.sorted().flatMap { profiles[$0]!.secrets }
            + tunnels.keys.sorted().compactMap { tunnels[$0]!.passphrase }
            + (serve?.tokens ?? []) + (serve?.dbPassword.map { [$0] } ?? [])
    }

    /// Profile names, sorted.
    public var profileNames: [String] { profiles.keys.sorted() }

    /// The tunnel a profile goes through, if any.
    public func tunnel(for profile: Profile) -> TunnelConfig? {
        profile.tunnel.flatMap { tunnels[$0] }
    }

    static func listing(_ names: [String]) -> String {
        names.isEmpty ? "no profiles are defined" : "profiles: \(names.joined(separator: ", "))"
    }
}
