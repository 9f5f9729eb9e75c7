/// A configuration problem: which file, which key, what is wrong and what to do about it.
///
/// Every configuration failure surfaces as this one type, so the CLI can map it to exit code 78
/// (`EX_CONFIG`) without knowing the details. `code` tells callers (and tests) which failure it is;
/// it wraps a private enum so new codes never break a caller's `switch`.
public struct ConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Which kind of configuration failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case configNotFound = "config not found"
            case unreadableFile = "unreadable file"
            case invalidTOML = "invalid TOML"
            case unknownKey = "unknown key"
            case wrongType = "wrong type"
            case missingKey = "missing key"
            case invalidValue = "invalid value"
            case unknownBackend = "unknown backend"
            case unknownTunnel = "unknown tunnel"
            case profileNotFound = "profile not found"
            case noProfileChosen = "no profile chosen"
            case insecureLiteralSecret = "literal secret in a readable file"
            case secretUnavailable = "secret unavailable"
            case stateDirectory = "state directory"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No config file at any of the places looked at.
        public static let configNotFound = Code(.configNotFound)
        /// The config file exists but cannot be read (permissions, a directory, not UTF-8).
        public static let unreadableFile = Code(.unreadableFile)
        /// The file is not valid TOML.
        public static let invalidTOML = Code(.invalidTOML)
        /// A key Tether does not know (usually a typo; the message suggests the closest one).
        public static let unknownKey = Code(.unknownKey)
        /// A value of the wrong TOML type (a string where an integer belongs, …).
        public static let wrongType = Code(.wrongType)
        /// A required key is absent.
        public static let missingKey = Code(.missingKey)
        /// A value of the right type that is still wrong (a bad URL, a port out of range, …).
        public static let invalidValue = Code(.invalidValue)
        /// `backend = "…"` names no known backend.
        public static let unknownBackend = Code(.unknownBackend)
        /// `tunnel = "…"` names no `[tunnels.NAME]` table.
        public static let unknownTunnel = Code(.unknownTunnel)
        /// The requested profile does not exist.
        public static let profileNotFound = Code(.profileNotFound)
        /// No profile was named and the file has no `default_profile` (and more than one profile).
        public static let noProfileChosen = Code(.noProfileChosen)
        /// A literal secret sits in a file that group or others can read.
        public static let insecureLiteralSecret = Code(.insecureLiteralSecret)
        /// An `{ env = … }` or `{ file = … }` secret could not be resolved.
        public static let secretUnavailable = Code(.secretUnavailable)
        /// The state directory could not be created or secured.
        public static let stateDirectory = Code(.stateDirectory)

        public var description: String { base.rawValue }
    }

    /// The exit code (sysexits `EX_CONFIG`) the CLI uses for every configuration error.
    public static let exitCode: Int32 = 78

    public let code: Code
    /// The file concerned (the config file, or the secret file / path that failed), if any.
    public let file: String?
    /// The dotted key, e.g. `profiles.home.url`, if the problem belongs to one; for a TOML syntax
    /// error, where no key can be known, the position (`line 3, column 7`).
    public let key: String?
    /// What is wrong, in one sentence.
    public let problem: String
    /// What to do about it.
    public let fix: String

    public init(_ code: Code, file: String?, key: String?, problem: String, fix: String) {
        self.code = code
        self.file = file
        self.key = key
        self.problem = problem
        self.fix = fix
    }

    /// `FILE: KEY: PROBLEM` then `fix: FIX` on a second line (compiler style, so editors can jump to it).
    public var description: String {
        let location = [file, key].compactMap { $0 }.joined(separator: ": ")
        let head = location.isEmpty ? problem : "\(location): \(problem)"
        return "\(head)\n  fix: \(fix)"
    }
}
