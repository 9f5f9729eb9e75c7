/// A transport failure, before any backend gives it meaning. The transport knows nothing of
/// the domain: adapters turn it into a `TetherError` (`tetherError(service:)` in
/// TetherAdapterSupport), adding what their backend knows.
public struct NetError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// DNS, refused, unreachable: nobody answered.
        case connect
        case timeout
        case tls
        /// The server answered with a status that is not success.
        case status(Int)
        /// A 200 whose content type is not `text/event-stream`, for a stream.
        case notEventStream(String?)
        /// A redirect without a `Location`, or too many.
        case badRedirect
        /// No bytes for longer than the liveness timeout.
        case stalled
        /// The body was larger than the limit.
        case tooLarge
        case cancelled
        /// The connection broke mid-transfer.
        case interrupted
        case other
    }

    public let kind: Kind
    public let url: String
    public let detail: String
    /// The body of an error response (capped), for the adapter to decode.
    public let body: [UInt8]
    public let headers: [String: String]

    public init(_ kind: Kind, url: String, detail: String, body: [UInt8] = [], headers: [String: String] = [:]) {
        self.kind = kind
        self.url = url
        self.detail = detail
        self.body = body
        self.headers = headers
    }

    public var description: String { "\(url): \(detail)" }

    public var status: Int? {
        if case .status(let code) = kind { return code }
        return nil
    }

    /// A failed TLS handshake (libcurl's `CURLE_SSL_CONNECT_ERROR`, 35). libcurl gives that one
    /// code both to a handshake that was cut — a TLS front end restarting, which a reconnect
    /// gets past — and to one that can never work (TLS to a plain-HTTP port: "wrong version
    /// number"; no shared cipher): `.interrupted` for the first, `.tls` for the second, told
    /// apart by libcurl's message. What libcurl 7.88 with OpenSSL 3.0 says when the peer resets
    /// mid-handshake: "Recv failure: Connection reset by peer"; when it just closes: "OpenSSL
    /// SSL_connect: SSL_ERROR_SYSCALL in connection to …" (or "unexpected eof").
    static func tlsHandshake(url: String, detail: String) -> NetError {
        let cut = ["Connection reset by peer", "Recv failure", "Send failure", "SSL_ERROR_SYSCALL", "unexpected eof", "Broken pipe"]
            .contains { detail.contains($0) }
        return NetError(cut ? .interrupted : .tls, url: url, detail: detail)
    }

    /// Whether a reconnect may help.
    public var isRetryable: Bool {
        switch kind {
        case .connect, .timeout, .stalled, .interrupted, .other: return true
        case .status(let code): return code >= 500 || code == 408 || code == 429
        case .tls, .notEventStream, .badRedirect, .tooLarge, .cancelled: return false
        }
    }
}
