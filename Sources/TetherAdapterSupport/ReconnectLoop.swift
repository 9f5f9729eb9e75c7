import TetherCore
import TetherNet

/// The reconnect schedule of a stream that holds one connection at a time (CodexMonitor's
/// daemon, Codex's app-server): connect and run it until it ends, then wait and connect again,
/// as `ReconnectPolicy` says, until the run is done or the policy gives up. Each step is
/// announced before the wait it begins (the caller turns it into `connection.state`).
public struct ReconnectLoop: Sendable {
    public enum Step: Sendable {
        case connecting(attempt: Int)
        case reconnecting(reason: String, retryIn: Duration, attempt: Int)
        case gaveUp(reason: String)
    }

    public var policy: ReconnectPolicy.Configuration
    /// Who is at the other end, for the error when the loop gives up ("codex app-server").
    public var service: String
    public var endpoint: String
    public var profile: String

    public init(policy: ReconnectPolicy.Configuration, service: String, endpoint: String, profile: String) {
        self.policy = policy
        self.service = service
        self.endpoint = endpoint
        self.profile = profile
    }

    /// Runs connections until one says the stream is done. `connection` connects and runs one
    /// connection: it calls `connected` once connected (a healthy connection restarts the
    /// schedule) and returns whether the stream is done; a retryable `TetherError` (or one that
    /// is `unavailable` or `timeout`) is a failed link. `closed` is the reason given when a
    /// connection ended without an error. Throws `unavailable` when the policy gives up.
    public func run(closed: String,
                    announce: (Step) async throws -> Void,
                    connection: (_ connected: () -> Void) async throws -> Bool) async throws {
        var schedule = ReconnectPolicy(configuration: policy)
        try await announce(.connecting(attempt: 1))
        while true {
            try Task.checkCancellation()
            schedule.connecting()
            let failure: ReconnectPolicy.Failure
            let reason: String
            do {
                let done = try await connection {
                    schedule.connected(at: .now)
                    schedule.madeProgress()
                }
                if done { return }
                failure = .streamEnded
                reason = closed
            } catch let error as TetherError where error.retryable || error.code == .unavailable || error.code == .timeout {
                failure = .transportError
                reason = error.message
            } catch let error as NetError {
                failure = .transportError
                reason = error.tetherError(service: service).message
            }
            switch schedule.failed(failure, at: .now) {
            case .reconnect(let delay, let attempt):
                try await announce(.reconnecting(reason: reason, retryIn: delay, attempt: attempt))
                try await Task.sleep(for: delay)
            case .stop(let why):
                try await announce(.gaveUp(reason: reason))
                throw TetherError(.unavailable, "gave up on \(service) at \(endpoint) (\(why)): \(reason)",
                                  hint: "`tether check -p \(profile)` tests the connection", retryable: true)
            }
        }
    }
}
