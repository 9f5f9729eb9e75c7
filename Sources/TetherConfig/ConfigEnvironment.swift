import Foundation

/// The process environment and home directory that configuration lookup depends on.
///
/// Injected rather than read from globals, so tests never touch the real home directory or
/// environment, and so the CLI decides once what "the environment" is.
public struct ConfigEnvironment: Sendable, Equatable {
    /// Environment variables (name → value).
    public var variables: [String: String]
    /// The user's home directory, used for `~` expansion and the XDG defaults.
    public var homeDirectory: String

    public init(variables: [String: String] = [:], homeDirectory: String) {
        self.variables = variables
        self.homeDirectory = homeDirectory
    }

    /// The running process's environment; home is `$HOME`, else the password database's entry.
    public static func current() -> ConfigEnvironment {
        let variables = ProcessInfo.processInfo.environment
        let home = variables["HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? FileManager.default.homeDirectoryForCurrentUser.path
        return ConfigEnvironment(variables: variables, homeDirectory: home)
    }

    /// The variable's value, or nil when it is unset or empty (an empty XDG variable counts as unset).
    public subscript(name: String) -> String? {
        guard let value = variables[name], !value.isEmpty else { return nil }
        return value
    }

    /// Expands a leading `~` or `~/` to the home directory. `~user` forms are left as written.
    public func expandingTilde(in path: String) -> String {
        if path == "~" { return homeDirectory }
        guard path.hasPrefix("~/") else { return path }
        let rest = path.dropFirst(2)
        return homeDirectory.hasSuffix("/") ? homeDirectory + rest : homeDirectory + "/" + rest
    }
}
