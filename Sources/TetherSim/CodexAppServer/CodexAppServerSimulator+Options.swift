import Foundation

/// What a turn does, chosen by the prompt's words unless `--scenario` forces one
/// (`CodexAppServerScenario.forPrompt`).
public enum CodexAppServerScenario: String, CaseIterable, Sendable {
    /// `Fake model reply. You said: <prompt>`, streamed in 12-character deltas.
    case plain
    /// A `commandExecution` that asks `item/commandExecution/requestApproval`.
    case cmd
    /// A `fileChange` (add `patched_by_codex.txt`) that asks `item/fileChange/requestApproval`.
    case patch
    /// `item/tool/requestUserInput` with one question.
    case question
    /// An `error` notification, then the turn `failed`.
    case fail
    /// The plain reply with its deltas a second apart (for cutting the link mid-stream).
    case slow

    /// The first word found wins, in this order: fail, question, patch, cmd; `slow` only paces.
    static func forPrompt(_ prompt: String) -> CodexAppServerScenario {
        let text = prompt.lowercased()
        for scenario in [CodexAppServerScenario.fail, .question, .patch, .cmd] where text.contains(scenario.rawValue) {
            return scenario
        }
        return .plain
    }
}

extension CodexAppServerSimulator {
    public struct Options: Sendable {
        /// Require `Authorization: Bearer <token>` on the WebSocket upgrade (`--ws-auth capability-token`).
        public var token: String?
        /// Time between scripted events.
        public var pacing: Duration
        /// Time between deltas of a `slow` reply.
        public var slowPacing: Duration = .seconds(1)
        /// Every turn runs this script instead of the prompt's choice.
        public var scenario: CodexAppServerScenario?
        /// Every Nth request is refused with `-32001 Server overloaded; retry later.`.
        public var overloadEvery: Int?
        /// Benchmarks: a connection that resumes the flood thread
        /// (``CodexAppServerSimulator/floodThreadID``) gets, after the resume's response, a turn
        /// of this many agent message deltas in it, to that connection alone — as codex streams a
        /// thread's events to its subscribers only.
        public var flood: Int?
        /// With `flood`: end the connection once its flood is out (stdio: the process exits), so
        /// a buffered `jq` sees EOF. Codex never does.
        public var floodClose = false
        /// `codexHome` in `initialize` and the rollout paths (nothing is written there).
        public var codexHome: String = "/tmp/tether-sim/codex-home"

        public init(token: String? = nil, pacing: Duration = .milliseconds(10),
                    scenario: CodexAppServerScenario? = nil, overloadEvery: Int? = nil) {
            self.token = token
            self.pacing = pacing
            self.scenario = scenario
            self.overloadEvery = overloadEvery
        }
    }
}
