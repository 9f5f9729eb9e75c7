import TetherCore
import TetherStreaming

/// The daemon's handshake. With a token configured it answers nothing but `auth` until the
/// token matches (and sends no events before). A daemon started with `--insecure-no-auth`, or a
/// connection already authenticated, answers `auth` with `unknown method: auth`: that is a
/// success, not a failure (the fork's Swift client gets this wrong). Without a token Tether
/// probes with `ping`, so that a daemon wanting one says `unauthorized` at once.
enum CodexMonitorAuth {
    enum Outcome: Equatable, Sendable {
        /// The token was accepted.
        case authenticated
        /// The daemon runs without auth.
        case open
        /// The daemon refused the token (`invalid token`).
        case refused
        /// The daemon wants a token and the profile has none (`unauthorized`).
        case tokenRequired
        /// Something else went wrong; the message is the daemon's.
        case failed(String)
    }

    /// The request that authenticates (or probes): `auth {token}`, or `ping` without a token.
    static func request(token: String?) -> (method: String, params: JSONValue?) {
        guard let token else { return ("ping", nil) }
        return ("auth", ["token": .string(token)])
    }

    /// What the daemon's answer to ``request(token:)`` means.
    static func outcome(token: String?, answer: Result<JSONValue, CodexMonitorRPC.RemoteError>) -> Outcome {
        switch answer {
        case .success:
            return token == nil ? .open : .authenticated
        case .failure(let error):
            switch error.message {
            case "invalid token": return .refused
            case "unauthorized": return .tokenRequired
            case "unknown method: auth": return .open
            default:
                // Without a token we sent `ping`: an unknown method means we are past the auth gate.
                return token == nil && error.isUnknownMethod ? .open : .failed(error.message)
            }
        }
    }

    /// The error an outcome means for profile `profile` at `endpoint`; nil when usable.
    static func error(for outcome: Outcome, endpoint: String, profile: String) -> TetherError? {
        switch outcome {
        case .authenticated, .open:
            return nil
        case .refused:
            return TetherError(.authentication, "CodexMonitor at \(endpoint) refused the token of profile \(profile) (invalid token)",
                               hint: "check profiles.\(profile).token: it must match the daemon's --token or CODEX_MONITOR_DAEMON_TOKEN")
        case .tokenRequired:
            return TetherError(.authentication, "CodexMonitor at \(endpoint) requires a token and profile \(profile) has none (unauthorized)",
                               hint: "set profiles.\(profile).token, e.g. { env = \"CODEX_MONITOR_DAEMON_TOKEN\" }")
        case .failed(let message):
            return TetherError(.failed, "CodexMonitor at \(endpoint) failed the auth handshake of profile \(profile): \(message)")
        }
    }
}
