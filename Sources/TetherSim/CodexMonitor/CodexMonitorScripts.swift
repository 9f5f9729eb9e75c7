/// The scripted turns of the CodexMonitor simulator, chosen from the prompt text.
///
/// | prompt contains (whole words, any case) | script |
/// |---|---|
/// | `long N` | `.long(N)`: one agent message in N deltas (benchmarks) |
/// | `fail` | `.failedTurn`: `error` (willRetry true), `error` (willRetry false), `turn/completed` failed |
/// | `interrupt` or `wait` | `.interrupt`: starts streaming, then waits for `turn_interrupt` |
/// | `noise` | `.noise`: `codex/stderr`, `codex/parseError`, `codex/backgroundThread`, rate limits, `configWarning`, `terminal-output`, `terminal-exit`, then a reply |
/// | `file`, `edit` or `patch` | `.fileChange`: a `fileChange` item and `item/fileChange/requestApproval` |
/// | `failing` | `.failingCommand`: like `.command`, but `npm test` exits 1 |
/// | `run`, `test`, `tests`, `command`, `approve` or `npm` | `.command`: `npm test` behind `item/commandExecution/requestApproval` |
/// | anything else | `.reply`: reasoning, a plan, a streamed answer, token usage |
public enum CodexMonitorScenario: Sendable, Equatable {
    case reply
    case command
    case failingCommand
    case fileChange
    case interrupt
    case failedTurn
    case noise
    case long(Int)

    /// The names `init(name:)` accepts (`long` takes a count: `long:500`).
    public static let names = ["reply", "command", "failing-command", "file-change", "interrupt", "fail", "noise", "long:N"]

    public var name: String {
        switch self {
        case .reply: "reply"
        case .command: "command"
        case .failingCommand: "failing-command"
        case .fileChange: "file-change"
        case .interrupt: "interrupt"
        case .failedTurn: "fail"
        case .noise: "noise"
        case .long(let count): "long:\(count)"
        }
    }

    /// Parses a scenario name (`tether simulate --scenario`): one of `names`.
    public init?(name: String) {
        let lowered = name.lowercased()
        if lowered.hasPrefix("long") {
            let digits = lowered.dropFirst(4).drop { $0 == ":" || $0 == " " || $0 == "=" }
            guard let count = Int(digits), count >= 0 else { return nil }
            self = .long(count)
            return
        }
        switch lowered {
        case "reply": self = .reply
        case "command": self = .command
        case "failing-command": self = .failingCommand
        case "file-change": self = .fileChange
        case "interrupt": self = .interrupt
        case "fail": self = .failedTurn
        case "noise": self = .noise
        default: return nil
        }
    }

    /// The script a prompt selects (table above).
    public static func forPrompt(_ text: String) -> CodexMonitorScenario {
        let words = text.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init)
        let has = { (candidates: Set<String>) in words.contains { candidates.contains($0) } }
        if let index = words.firstIndex(of: "long"), index + 1 < words.count, let count = Int(words[index + 1]) {
            return .long(count)
        }
        if has(["fail"]) { return .failedTurn }
        if has(["interrupt", "wait"]) { return .interrupt }
        if has(["noise"]) { return .noise }
        if has(["file", "edit", "patch"]) { return .fileChange }
        if has(["failing"]) { return .failingCommand }
        if has(["run", "test", "tests", "command", "approve", "npm"]) { return .command }
        return .reply
    }
}

extension CodexMonitorSimulator {
    /// A client's answer to an approval request, as app-server reads `result.decision`.
    enum ApprovalDecision: Equatable {
        case accept
        case acceptForSession
        /// `{acceptWithExecpolicyAmendment:{execpolicy_amendment:[…]}}` (snake_case inner key).
        case acceptWithAmendment([String])
        /// `{applyNetworkPolicyAmendment:{network_policy_amendment:{host, action}}}`.
        case networkPolicy(allow: Bool)
        case decline
        case cancel
        /// Anything else: the item fails and the turn goes on (notes §8).
        case unrecognized

        init(result: JSON, allowsAmendments: Bool) {
            switch result["decision"] {
            case .some(.string("accept")): self = .accept
            case .some(.string("acceptForSession")): self = .acceptForSession
            case .some(.string("decline")): self = .decline
            case .some(.string("cancel")): self = .cancel
            case .some(let decision):
                if allowsAmendments,
                   let amendment = decision["acceptWithExecpolicyAmendment"]?["execpolicy_amendment"]?.arrayValue {
                    let argv = amendment.compactMap(\.stringValue)
                    self = argv.count == amendment.count ? .acceptWithAmendment(argv) : .unrecognized
                } else if allowsAmendments,
                          let action = decision["applyNetworkPolicyAmendment"]?["network_policy_amendment"]?["action"]?.stringValue {
                    self = .networkPolicy(allow: action == "allow")
                } else {
                    self = .unrecognized
                }
            case .none:
                self = .unrecognized
            }
        }
    }
}

extension CodexMonitorSimulator.TurnScript {
    func perform(_ scenario: CodexMonitorScenario) async throws {
        switch scenario {
        case .reply: try await reply()
        case .command: try await command(failing: false)
        case .failingCommand: try await command(failing: true)
        case .fileChange: try await fileChange()
        case .interrupt: try await waitForInterrupt()
        case .failedTurn: try await failedTurn()
        case .noise: try await noise()
        case .long(let count): try await long(count)
        }
    }

    // MARK: - Streaming reply

    private func reply() async throws {
        let reasoningID = world.nextItemID("r")
        try await start(AppServer.reasoningItem(id: reasoningID, summary: [], content: []))
        try await emit(AppServer.reasoningSummaryPartAdded(threadID: threadID, turnID: turnID, itemID: reasoningID, index: 0))
        try await delta("item/reasoning/summaryTextDelta", itemID: reasoningID, "**Planning** ",
                        extra: [.init(key: "summaryIndex", value: 0)])
        try await delta("item/reasoning/summaryTextDelta", itemID: reasoningID, "the answer",
                        extra: [.init(key: "summaryIndex", value: 0)])
        try await delta("item/reasoning/textDelta", itemID: reasoningID, "The user wants a short reply.",
                        extra: [.init(key: "contentIndex", value: 0)])
        try await complete(AppServer.reasoningItem(
            id: reasoningID, summary: ["**Planning** the answer"], content: ["The user wants a short reply."]
        ))
        try await emit(AppServer.planUpdated(threadID: threadID, turnID: turnID, explanation: "Answer directly",
                                             steps: [("Read the request", "completed"), ("Write the answer", "inProgress")]))
        try await say("Hello from the simulated Codex. This reply was streamed in small deltas.")
        try await emit(AppServer.planUpdated(threadID: threadID, turnID: turnID, explanation: "Answer directly",
                                             steps: [("Read the request", "completed"), ("Write the answer", "completed")]))
        try await usage(reasoning: 64)
        try await finish(status: "completed")
    }

    // MARK: - Command approval

    private func command(failing: Bool) async throws {
        let argv = ["npm", "test"]
        let command = argv.joined(separator: " ")
        let cwd = workspace.path
        try await say("I'll run the tests.")
        let itemID = world.nextItemID("c")
        try await start(AppServer.commandItem(id: itemID, command: command, cwd: cwd, status: "inProgress"))

        if approvalPolicy != "never", !world.isPreapproved(threadID: threadID, argv: argv) {
            var params: JSON = ["threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(itemID)]
            if isCurrent { params["startedAtMs"] = .int(AppServer.nowMs) }
            params["reason"] = "needs network"
            params["command"] = .string(command)
            params["cwd"] = .string(cwd)
            params["commandActions"] = [["type": "unknown", "command": .string(command)]]
            params["proposedExecpolicyAmendment"] = .array(argv.map(JSON.string))
            if isCurrent {
                params["kind"] = "command"
                params["availableDecisions"] = [
                    "accept", "acceptForSession",
                    ["acceptWithExecpolicyAmendment": ["execpolicy_amendment": .array(argv.map(JSON.string))]],
                    "decline", "cancel",
                ]
            }
            let result = try await requestApproval(method: "item/commandExecution/requestApproval", params: params)
            switch CodexMonitorSimulator.ApprovalDecision(result: result, allowsAmendments: true) {
            case .accept, .networkPolicy(allow: true):
                break
            case .acceptForSession:
                world.approveForSession(threadID: threadID, argv: argv)
            case .acceptWithAmendment(let prefix):
                world.allowPrefix(threadID: threadID, prefix: prefix)
            case .decline, .networkPolicy(allow: false):
                try await complete(AppServer.commandItem(id: itemID, command: command, cwd: cwd, status: "declined"))
                try await say("Okay, I won't run `\(command)`.")
                try await usage()
                try await finish(status: "completed")
                return
            case .cancel:
                try await complete(AppServer.commandItem(id: itemID, command: command, cwd: cwd, status: "declined"))
                try await finish(status: "interrupted")
                return
            case .unrecognized:
                try await complete(AppServer.commandItem(id: itemID, command: command, cwd: cwd, status: "failed"))
                try await say("The approval answer was not understood, so `\(command)` did not run.")
                try await usage()
                try await finish(status: "completed")
                return
            }
        }

        let output = ["\n> demo@1.0.0 test\n> node --test\n\n", failing ? "2 passing\n1 failing\n" : "3 passing\n"]
        for chunk in output {
            try await delta("item/commandExecution/outputDelta", itemID: itemID, chunk)
        }
        try await complete(AppServer.commandItem(
            id: itemID, command: command, cwd: cwd, status: failing ? "failed" : "completed",
            output: output.joined(), exitCode: failing ? 1 : 0, durationMs: 812
        ))
        try await say(failing ? "One test fails: `adds numbers` expected 3, got 4." : "All 3 tests pass.")
        try await usage(input: 1800, output: 240)
        try await finish(status: "completed")
    }

    // MARK: - File change approval

    private func fileChange() async throws {
        let changes = [AppServer.fileChange(path: "a.txt", kind: "update", diff: "@@ -1 +1 @@\n-hello\n+hello, world\n")]
        let diff = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n"
        try await say("I'll update a.txt.")
        let itemID = world.nextItemID("f")
        try await start(AppServer.fileChangeItem(id: itemID, changes: changes, status: "inProgress"))
        if isCurrent {
            try await emit(AppServer.message("item/fileChange/patchUpdated", [
                "threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(itemID),
                "changes": .array(changes),
            ]))
        }
        if approvalPolicy != "never" {
            var params: JSON = ["threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(itemID)]
            if isCurrent { params["startedAtMs"] = .int(AppServer.nowMs) }
            params["reason"] = "write to a.txt"
            params["grantRoot"] = .null
            let result = try await requestApproval(method: "item/fileChange/requestApproval", params: params)
            switch CodexMonitorSimulator.ApprovalDecision(result: result, allowsAmendments: false) {
            case .accept, .acceptForSession:
                break
            case .decline:
                try await complete(AppServer.fileChangeItem(id: itemID, changes: changes, status: "declined"))
                try await say("Okay, I left a.txt unchanged.")
                try await usage()
                try await finish(status: "completed")
                return
            case .cancel:
                try await complete(AppServer.fileChangeItem(id: itemID, changes: changes, status: "declined"))
                try await finish(status: "interrupted")
                return
            default:
                try await complete(AppServer.fileChangeItem(id: itemID, changes: changes, status: "failed"))
                try await say("The approval answer was not understood, so a.txt is unchanged.")
                try await usage()
                try await finish(status: "completed")
                return
            }
        }
        if !isCurrent {
            try await delta("item/fileChange/outputDelta", itemID: itemID, "Success. Updated the following files:\nM a.txt\n")
        }
        try await complete(AppServer.fileChangeItem(id: itemID, changes: changes, status: "completed"))
        try await emit(AppServer.diffUpdated(threadID: threadID, turnID: turnID, diff: diff))
        try await say("Updated a.txt.")
        try await usage(input: 1500, output: 180)
        try await finish(status: "completed")
    }

    // MARK: - Interrupt, failure, noise, long

    /// Streams a little, then runs until `turn_interrupt` (or `stop()`) cancels it.
    private func waitForInterrupt() async throws {
        let id = world.nextItemID("a")
        try await start(AppServer.agentMessageItem(id: id, text: ""))
        try await delta("item/agentMessage/delta", itemID: id, "Working on it")
        try await delta("item/agentMessage/delta", itemID: id, "…")
        try await Task.sleep(for: .seconds(86_400))
    }

    private func failedTurn() async throws {
        try await emit(AppServer.error(threadID: threadID, turnID: turnID, message: "Reconnecting... 1/5",
                                       info: nil, willRetry: true))
        try await emit(AppServer.error(threadID: threadID, turnID: turnID, message: "Usage limit reached",
                                       info: "usageLimitExceeded", willRetry: false))
        try await finish(status: "failed", error: [
            "message": "Usage limit reached", "codexErrorInfo": "usageLimitExceeded", "additionalDetails": .null,
        ])
    }

    private func noise() async throws {
        try await emit(AppServer.message("codex/stderr", ["message": "WARN noise"]))
        try await emit(AppServer.message("codex/parseError", ["error": "expected value at line 1 column 1", "raw": "not json"]))
        try await emit(AppServer.message("codex/backgroundThread", ["threadId": "thr_bg_1", "action": "hide"]))
        // Thread-less account events are duplicated once per workspace on the shared session (§3).
        for connected in world.connectedWorkspaces {
            try Task.checkCancellation()
            simulator.emit(AppServer.rateLimitsUpdated(), workspaceID: connected.id)
        }
        try await emit(AppServer.message("configWarning", ["summary": "unknown key `foo` in config.toml", "details": .null]))
        let terminal: JSON = ["workspaceId": .string(workspace.id), "terminalId": "term-1"]
        try await notify("terminal-output", CodexMonitorSimulator.terminalOutput(terminal, "$ echo hi\r\nhi\r\n"))
        try await notify("terminal-exit", terminal)
        try await say("Noise delivered.")
        try await finish(status: "completed")
    }

    private func long(_ count: Int) async throws {
        let id = world.nextItemID("a")
        try await start(AppServer.agentMessageItem(id: id, text: ""))
        var text = ""
        for index in 0..<count {
            let chunk = "tok\(index) "
            text += chunk
            try await delta("item/agentMessage/delta", itemID: id, chunk)
        }
        try await complete(AppServer.agentMessageItem(id: id, text: text))
        try await usage(input: 100, output: count)
        try await finish(status: "completed")
    }
}
