/// Where a config file path came from; error messages say so, because "which file did it read?"
/// is the first question when configuration goes wrong.
public struct ConfigLocation: Sendable, Equatable, CustomStringConvertible {
    public enum Origin: Sendable, Equatable {
        /// `--config PATH`
        case argument
        /// `$TETHER_CONFIG`
        case tetherConfigVariable
        /// `$XDG_CONFIG_HOME/tether/config.toml`
        case xdgConfigHome
        /// `~/.config/tether/config.toml`
        case homeDefault
    }

    public let path: String
    public let origin: Origin

    public init(path: String, origin: Origin) {
        self.path = path
        self.origin = origin
    }

    public var description: String {
        switch origin {
        case .argument: return "\(path) (from --config)"
        case .tetherConfigVariable: return "\(path) (from $TETHER_CONFIG)"
        case .xdgConfigHome: return "\(path) (from $XDG_CONFIG_HOME)"
        case .homeDefault: return "\(path) (default)"
        }
    }
}

/// Config file lookup and the state directory, following the XDG base directory spec.
public enum ConfigPaths {
    /// The commented example config, relative to the repository root.
    public static let examplePath = "config/tether.example.toml"

    /// The places to look, in order. An explicit choice (`--config`, then `$TETHER_CONFIG`) is the
    /// only candidate: if the user named a file, silently reading another would be a surprise.
    /// Otherwise `$XDG_CONFIG_HOME/tether/config.toml` (when set to an absolute path, as the spec
    /// requires), then `~/.config/tether/config.toml`.
    public static func candidates(override: String?, environment: ConfigEnvironment) -> [ConfigLocation] {
        if let override {
            return [ConfigLocation(path: environment.expandingTilde(in: override), origin: .argument)]
        }
        if let path = environment["TETHER_CONFIG"] {
            return [ConfigLocation(path: environment.expandingTilde(in: path), origin: .tetherConfigVariable)]
        }
        var result: [ConfigLocation] = []
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            result.append(ConfigLocation(path: join(xdg, "tether/config.toml"), origin: .xdgConfigHome))
        }
        let home = ConfigLocation(path: join(environment.homeDirectory, ".config/tether/config.toml"), origin: .homeDefault)
        if !result.contains(where: { $0.path == home.path }) { result.append(home) }
        return result
    }

    /// The first candidate that exists. Throws `ConfigError` (`.configNotFound`) listing every path tried.
    public static func locate(override: String?, environment: ConfigEnvironment) throws -> ConfigLocation {
        let tried = candidates(override: override, environment: environment)
        for location in tried {
            switch FileAccess.existence(of: location.path) {
            case .missing: continue
            // Present, or there but not stat-able: loading it gives the precise error.
            case .present, .inaccessible: return location
            }
        }
        if let only = tried.first, tried.count == 1, only.origin != .homeDefault {
            let how = only.origin == .argument ? "pass --config with an existing file" : "point TETHER_CONFIG at an existing file or unset it"
            throw ConfigError(
                .configNotFound, file: only.path, key: nil,
                problem: "config file not found: \(only)",
                fix: "\(how); \(examplePath) in the Tether repository is a commented starting point")
        }
        let last = tried.last?.path ?? ""
        throw ConfigError(
            .configNotFound, file: last, key: nil,
            problem: "no config file found; tried: \(tried.map(\.description).joined(separator: ", "))",
            fix: "copy \(examplePath) from the Tether repository to \(last) and edit it (chmod 600 if it holds literal secrets), or pass --config PATH. "
                + "To try Tether first: `tether demo` needs no config, and `tether simulate opencode` prints a profile that reaches it")
    }

    /// `$XDG_STATE_HOME/tether`, else `~/.local/state/tether`: resume cursors, the offline queue, TOFU pins.
    public static func stateDirectory(environment: ConfigEnvironment) -> String {
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") {
            return join(xdg, "tether")
        }
        return join(environment.homeDirectory, ".local/state/tether")
    }

    /// Creates the state directory (and missing parents) with mode 0700, tightening an existing one
    /// to 0700, and returns its path.
    @discardableResult
    public static func createStateDirectory(environment: ConfigEnvironment) throws -> String {
        let path = stateDirectory(environment: environment)
        do {
            try FileAccess.createDirectory(path, mode: 0o700)
        } catch {
            throw ConfigError(
                .stateDirectory, file: path, key: "XDG_STATE_HOME",
                problem: "cannot create the state directory: \(error.reason)",
                fix: "make \(path) a directory you own (mode 700), or set XDG_STATE_HOME to a writable directory")
        }
        return path
    }

    static func join(_ directory: String, _ relative: String) -> String {
        directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
    }
}
