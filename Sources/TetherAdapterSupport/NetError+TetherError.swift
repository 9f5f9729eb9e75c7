import TetherCore
import TetherNet

/// How a transport failure reads to a user: the one mapping from `NetError` to `TetherError`,
/// shared by every adapter and the CLI (the transport itself knows nothing of the domain).
extension NetError {
    /// The generic mapping; adapters special-case the statuses their backend gives meaning to.
    public func tetherError(service: String) -> TetherError {
        let url = URLCredentials.redacted(self.url)  // a URL's user:password is never shown
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
