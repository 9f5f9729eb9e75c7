import Logging
import TetherCore
import TetherNet

extension ReconnectPolicy {
    /// A stream's REST step (a resync, a log catch-up, the prompt's POST) failed in a way that may
    /// pass: says so on `output` and waits the policy's next delay, or throws `error` once the
    /// policy gives up. Both OpenCode generations' streams answer such a failure this way.
    mutating func waitToReconnect(after error: TetherError, during what: String, endpoint: String,
                                  output: EventChannel, logger: Logger) async throws {
        connecting()
        switch failed(.transportError, at: .now) {
        case .reconnect(let delay, let attempt):
            logger.info("OpenCode went away during \(what); reconnecting", metadata: ["error": "\(error.message)"])
            try await output.send(.connection(.reconnecting, attempt: attempt, endpoint: endpoint,
                                              reason: "\(error.message); retrying in \(delay.secondsText)"))
            try await Task.sleep(for: delay)
        case .stop:
            throw error
        }
    }
}
