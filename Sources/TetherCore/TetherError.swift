/// The one error type that crosses layers. Its `code` is stable (it appears in `error` events and
/// scripts switch on it) and decides the process exit code (sysexits, as the design lists them).
/// Every message says what failed; `hint` says what to do. Neither ever contains a secret.
public struct TetherError: Error, CustomStringConvertible, Sendable, Equatable {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Wrong arguments, or a command the backend cannot do (exit 64).
        public static let usage = Code(rawValue: "usage")
        public static let unsupported = Code(rawValue: "unsupported")
        /// The operation ran and failed: a failed turn, a refused request (exit 1).
        public static let failed = Code(rawValue: "failed")
        public static let notFound = Code(rawValue: "not_found")
        public static let conflict = Code(rawValue: "conflict")
        public static let timeout = Code(rawValue: "timeout")
        /// The backend sent something we cannot read (exit 65).
        public static let badData = Code(rawValue: "bad_data")
        /// The backend cannot be reached or went away (exit 69).
        public static let unavailable = Code(rawValue: "unavailable")
        /// Credentials refused (exit 77).
        public static let authentication = Code(rawValue: "authentication")
        /// The configuration is wrong (exit 78).
        public static let configuration = Code(rawValue: "configuration")
        /// Interrupted by the user (exit 130).
        public static let interrupted = Code(rawValue: "interrupted")
        /// Events were lost and cannot be recovered (reported, not fatal).
        public static let eventsLost = Code(rawValue: "events_lost")
    }

    public let code: Code
    public let message: String
    public let hint: String?
    /// Whether retrying the same operation later may succeed.
    public let retryable: Bool

    public init(_ code: Code, _ message: String, hint: String? = nil, retryable: Bool = false) {
        self.code = code
        self.message = message
        self.hint = hint
        self.retryable = retryable
    }

    public var description: String {
        guard let hint else { return message }
        return "\(message)\n  → \(hint)"
    }

    public var exitCode: Int32 {
        switch code {
        case .usage, .unsupported: return 64
        case .badData: return 65
        case .unavailable, .timeout: return 69
        case .authentication: return 77
        case .configuration: return 78
        case .interrupted: return 130
        default: return 1
        }
    }
}

extension TetherError {
    public static func unsupported(_ what: String, backend: BackendKind, hint: String? = nil) -> TetherError {
        TetherError(.unsupported, "\(what) is not supported by the \(backend.rawValue) backend",
                    hint: hint ?? "run `tether check` to see what this profile's backend can do")
    }
}
