/// Why a tunnel could not be opened or kept open. `message` says what failed and what to do about
/// it; it never contains a passphrase or any other secret.
public struct SSHError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, coarsely; a struct so new kinds do not break callers that switch on it.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidConfiguration
            case listenFailed
            case connectFailed
            case handshakeFailed
            case hostKeyUnknown
            case hostKeyMismatch
            case hostKeyRevoked
            case authenticationFailed
            case stopped
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The configuration cannot work (bad path, bad port, nothing to authenticate with).
        public static let invalidConfiguration = Kind(.invalidConfiguration)
        /// The loopback listener could not be opened.
        public static let listenFailed = Kind(.listenFailed)
        /// The TCP connection to the SSH server failed (resolution, refused, timed out).
        public static let connectFailed = Kind(.connectFailed)
        /// The SSH protocol handshake failed or the session broke while it was being set up.
        public static let handshakeFailed = Kind(.handshakeFailed)
        /// The server's host key is in neither known_hosts nor the pin store.
        public static let hostKeyUnknown = Kind(.hostKeyUnknown)
        /// The server's host key differs from the one recorded for it.
        public static let hostKeyMismatch = Kind(.hostKeyMismatch)
        /// The server's host key is marked `@revoked` in known_hosts.
        public static let hostKeyRevoked = Kind(.hostKeyRevoked)
        /// The server refused every key offered (or none could be loaded).
        public static let authenticationFailed = Kind(.authenticationFailed)
        /// The tunnel was stopped before it was established.
        public static let stopped = Kind(.stopped)

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// Errors that retrying cannot fix: the tunnel gives up instead of re-establishing.
    var isFatal: Bool {
        switch kind {
        case .invalidConfiguration, .hostKeyUnknown, .hostKeyMismatch, .hostKeyRevoked,
             .authenticationFailed, .stopped:
            return true
        default:
            return false
        }
    }
}
