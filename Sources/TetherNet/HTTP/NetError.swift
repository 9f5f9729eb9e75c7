import TetherCore

/// A transport failure, before any backend gives it meaning. Adapters turn it into a
/// `TetherError` (usually through `tetherError(endpoint:)`), adding what the backend knows.
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

    /// Whether a reconnect may help.
    public var isRetryable: Bool {
        switch kind {
        case .connect, .timeout, .stalled, .interrupted, .other: return true
        case .status(let code): return code >= 500 || code == 408 || code == 429
        case .tls, .notEventStream, .badRedirect, .tooLarge, .cancelled: return false
        }
    }

    /// The generic mapping; adapters special-case the statuses their backend gives meaning to.
    public func tetherError(service: String) -> TetherError {
        switch kind {
        case .connect:
            return TetherError(.unavailable, "cannot connect to \(service) at \(url): \(detail)",
                               hint: "is the server running and the address right? `tether check` tests the profile",
                               retryable: true)
        case .timeout:
            return TetherError(.timeout, "\(service) at \(url) did not answer in time: \(detail)", retryable: true)
        case .tls:
            return TetherError(.unavailable, "TLS with \(service) at \(url) failed: \(detail)",
                               hint: "check the server's certificate; Tether always verifies TLS")
        case .status(401), .status(403):
            return TetherError(.authentication, "\(service) at \(url) refused the credentials (HTTP \(status ?? 0))",
                               hint: "check the profile's token or password (`tether profiles show NAME`)")
        case .status(let code):
            let snippet = String(decoding: body.prefix(300), as: UTF8.self)
            return TetherError(code >= 500 ? .unavailable : .failed,
                               "\(service) answered HTTP \(code) for \(url)" + (snippet.isEmpty ? "" : ": \(snippet)"),
                               retryable: isRetryable)
        case .notEventStream(let type):
            return TetherError(.badData, "\(url) is not an event stream (Content-Type: \(type ?? "none"))",
                               hint: "check the URL: it should serve text/event-stream")
        case .badRedirect:
            return TetherError(.badData, "\(url): \(detail)")
        case .stalled:
            return TetherError(.unavailable, "\(service) at \(url) went silent: \(detail)", retryable: true)
        case .tooLarge:
            return TetherError(.badData, "\(service) at \(url) sent too much: \(detail)")
        case .cancelled:
            return TetherError(.interrupted, "cancelled: \(url)")
        case .interrupted, .other:
            return TetherError(.unavailable, "\(service) at \(url): \(detail)", retryable: true)
        }
    }
}
