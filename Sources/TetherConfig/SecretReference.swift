/// How a secret (token, password, passphrase) is given in the config file.
///
/// ```toml
/// password = "hunter2"                              # literal: refused unless the file is chmod 600
/// password = { env = "OPENCODE_SERVER_PASSWORD" }   # read from the environment
/// password = { file = "~/.config/tether/oc.pass" }  # read from a file, trailing newline trimmed
/// ```
///
/// References are resolved lazily, only for the profile in use. `description`, `debugDescription`
/// and the reflection mirror are redacted, so string interpolation, `print` and `dump` never show
/// a literal secret.
public enum SecretReference: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The secret itself, written in the config file.
    case literal(String)
    /// The name of an environment variable holding the secret.
    case environment(String)
    /// A path (a leading `~` is expanded on resolution) to a file holding the secret.
    case file(String)

    /// Shown instead of a literal secret.
    public static let mask = "••••••"

    public var isLiteral: Bool {
        if case .literal = self { return true }
        return false
    }

    /// The secret's value. `key` and `file` (the dotted config key and the config file) only make
    /// the error message point at the right place.
    /// - Throws: `ConfigError` (`.secretUnavailable`) when the variable is unset or empty, or the
    ///   file cannot be read or is empty.
    public func resolve(_ environment: ConfigEnvironment, key: String? = nil, file: String? = nil) throws -> String {
        let name = key ?? "the secret"
        switch self {
        case .literal(let value):
            return value
        case .environment(let variable):
            guard let value = environment.variables[variable] else {
                throw ConfigError(
                    .secretUnavailable, file: file, key: key,
                    problem: "environment variable \(variable) is not set (\(name) = { env = \"\(variable)\" })",
                    fix: "export \(variable)=… before running tether, or change \(name) to { file = \"PATH\" }")
            }
            guard !value.isEmpty else {
                throw ConfigError(
                    .secretUnavailable, file: file, key: key,
                    problem: "environment variable \(variable) is empty (\(name) = { env = \"\(variable)\" })",
                    fix: "export \(variable) with the secret as its value, or change \(name) to { file = \"PATH\" }")
            }
            return value
        case .file(let written):
            let path = environment.expandingTilde(in: written)
            let contents: FileAccess.Contents
            do {
                contents = try FileAccess.read(path)
            } catch {
                throw ConfigError(
                    .secretUnavailable, file: file, key: key,
                    problem: "cannot read the secret file \(path) (\(name) = { file = \"\(written)\" }): \(error.reason)",
                    fix: "put the secret in \(path) (chmod 600), or point \(name) at another file or at { env = \"NAME\" }")
            }
            var value = String(decoding: contents.bytes, as: UTF8.self)
            while let last = value.last, last == "\n" || last == "\r" || last == "\r\n" { value.removeLast() }
            guard !value.isEmpty else {
                throw ConfigError(
                    .secretUnavailable, file: file, key: key,
                    problem: "the secret file \(path) is empty (\(name) = { file = \"\(written)\" })",
                    fix: "write the secret into \(path), or point \(name) at another file or at { env = \"NAME\" }")
            }
            return value
        }
    }

    /// The TOML form with the value hidden: `{ env = "NAME" }`, `{ file = "PATH" }` or `"••••••"`.
    public var redacted: String {
        switch self {
        case .literal: return TOMLText.quoted(Self.mask)
        case .environment(let variable): return "{ env = \(TOMLText.quoted(variable)) }"
        case .file(let path): return "{ file = \(TOMLText.quoted(path)) }"
        }
    }

    public var description: String { redacted }
    public var debugDescription: String { redacted }
    public var customMirror: Mirror { Mirror(self, children: ["redacted": redacted]) }
}

/// A secret as configured at one key of one config file: resolving it names that key in errors.
public struct ConfiguredSecret: Sendable, Equatable, CustomStringConvertible {
    public let reference: SecretReference
    /// The dotted key, e.g. `profiles.home.password`.
    public let key: String
    /// The config file it was read from.
    public let file: String

    public init(reference: SecretReference, key: String, file: String) {
        self.reference = reference
        self.key = key
        self.file = file
    }

    /// The secret's value; see `SecretReference.resolve(_:key:file:)`.
    public func resolve(_ environment: ConfigEnvironment) throws -> String {
        try reference.resolve(environment, key: key, file: file)
    }

    public var description: String { reference.redacted }
}
