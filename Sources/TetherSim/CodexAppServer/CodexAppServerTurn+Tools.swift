import Foundation

/// The tool calls of the `cmd`, `patch` and `question` scripts, with each answer's observed effect
/// (note §5). Each returns the text of the model's next reply, or nil when the answer ended the
/// turn (`cancel`).
extension CodexAppServerTurn {
    enum Decision: Equatable {
        case accept, acceptForSession, acceptWithAmendment([String]), decline, cancel, malformed
    }

    static func decision(_ answer: JSON) -> Decision {
        let decision = answer["decision"]
        switch decision?.stringValue {
        case "accept": return .accept
        case "acceptForSession": return .acceptForSession
        case "decline": return .decline
        case "cancel": return .cancel
        default: break
        }
        if let amendment = decision?["acceptWithExecpolicyAmendment"]?["execpolicy_amendment"]?.arrayValue {
            return .acceptWithAmendment(amendment.compactMap(\.stringValue))
        }
        if decision?["applyNetworkPolicyAmendment"] != nil { return .accept }
        return .malformed
    }

    private static func toolReply(_ output: String) -> String {
        "Fake model reply. Tool said: " + String(output.prefix(80))
    }

    private struct ThreadSettings {
        var cwd: String
        var neverAsk: Bool
        var sessionApproved: Bool
        var rules: [[String]]
    }

    private func settings(sessionKey: String) -> ThreadSettings {
        sim.state.withLock { state in
            let thread = state.threads[threadID]
            return ThreadSettings(
                cwd: thread?.cwd ?? "/", neverAsk: thread?.approvalPolicy.stringValue == "never",
                sessionApproved: thread?.sessionApprovals.contains(sessionKey) ?? false, rules: state.execRules)
        }
    }

    // MARK: - cmd

    /// `/bin/bash -lc 'touch created_by_codex.txt && echo done'`, asked under any policy but
    /// `never`, unless approved for the session or covered by execpolicy rules.
    func command() async throws -> String? {
        let touchRule = ["touch", "created_by_codex.txt"]
        let echoRule = ["echo", "done"]
        let context = settings(sessionKey: Shapes.command)
        let covered = context.rules.contains(touchRule) && context.rules.contains(echoRule)
        let itemID = CodexAppServerIDs.callID()
        let running = Shapes.commandExecution(id: itemID, cwd: context.cwd, status: "inProgress")
        let processID = String(Int.random(in: 10_000...99_999))
        let output = "Chunk ID: \(String(format: "%06x", Int.random(in: 0...0xFFFFFF)))\nWall time: 0.0000 seconds\n"
            + "Process exited with code 0\nOriginal token count: 2\nOutput:\ndone\n"
        let ran = Shapes.commandExecution(id: itemID, cwd: context.cwd, status: "completed", processID: processID,
                                          source: "unifiedExecStartup", output: "done\n", exitCode: 0, durationMs: 0)
        try await pause()
        guard !(context.neverAsk || context.sessionApproved || covered) else {
            startItem(running)
            try await pause()
            completeItem(ran, persisted: true)
            return Self.toolReply(output)
        }
        // The first rule accepted moves the proposal on to the rest of the command (note §5).
        let proposal = context.rules.contains(touchRule) ? echoRule : touchRule
        setFlags(["waitingOnApproval"])
        startItem(running)
        let answer = try await ask("item/commandExecution/requestApproval", [
            "kind": "command", "threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(itemID),
            "startedAtMs": .int(CodexAppServerWire.nowMs), "environmentId": "local",
            "reason": "fake model wants to create a file", "command": .string(Shapes.command), "cwd": .string(context.cwd),
            "commandActions": Shapes.commandActions, "proposedExecpolicyAmendment": .array(proposal.map(JSON.string)),
            "availableDecisions": [
                "accept", ["acceptWithExecpolicyAmendment": ["execpolicy_amendment": .array(proposal.map(JSON.string))]], "cancel",
            ],
        ])
        let declined = Shapes.commandExecution(id: itemID, cwd: context.cwd, status: "declined")
        switch Self.decision(answer) {
        case .accept, .acceptForSession, .acceptWithAmendment:
            sim.state.withLock { state in
                switch Self.decision(answer) {
                case .acceptForSession: state.threads[threadID]?.sessionApprovals.insert(Shapes.command)
                case .acceptWithAmendment(let rule): if !state.execRules.contains(rule) { state.execRules.append(rule) }
                default: break
                }
            }
            setFlags([])
            try await pause()
            completeItem(ran, persisted: true)
            return Self.toolReply(output)
        case .decline:
            completeItem(declined, persisted: false)
            setFlags([])
            return Self.toolReply(#"exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }"#)
        case .cancel:
            completeItem(declined, persisted: false)
            setFlags([])
            try await pause()
            usage()
            end(status: "interrupted", items: [], itemsView: "notLoaded")
            return nil
        case .malformed:
            completeItem(Shapes.commandExecution(id: itemID, cwd: context.cwd, status: "failed"), persisted: false)
            setFlags([])
            return Self.toolReply("approval request failed")
        }
    }

    // MARK: - patch

    /// `apply_patch` adding `patched_by_codex.txt`: a fileChange item (its diff only there), then
    /// `item/fileChange/requestApproval` with no diff.
    func patch() async throws -> String? {
        let sessionKey = "*fileChange*"
        let context = settings(sessionKey: sessionKey)
        let itemID = CodexAppServerIDs.callID()
        let output = "Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0 seconds\nOutput:\n"
            + "Success. Updated the following files:\nA \(Shapes.patchedFile)\n"
        try await pause()
        startItem(Shapes.fileChange(id: itemID, cwd: context.cwd, status: "inProgress"), inSnapshot: true)
        let applied = Shapes.fileChange(id: itemID, cwd: context.cwd, status: "completed")
        guard !(context.neverAsk || context.sessionApproved) else {
            try await pause()
            completeItem(applied, persisted: true)
            markDiff()
            return Self.toolReply(output)
        }
        setFlags(["waitingOnApproval"])
        let answer = try await ask("item/fileChange/requestApproval", [
            "threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(itemID),
            "startedAtMs": .int(CodexAppServerWire.nowMs), "reason": .null, "grantRoot": .null,
        ])
        switch Self.decision(answer) {
        case .accept, .acceptForSession, .acceptWithAmendment:
            if Self.decision(answer) == .acceptForSession {
                sim.state.withLock { _ = $0.threads[threadID]?.sessionApprovals.insert(sessionKey) }
            }
            setFlags([])
            try await pause()
            completeItem(applied, persisted: true)
            markDiff()
            return Self.toolReply(output)
        case .decline:
            completeItem(Shapes.fileChange(id: itemID, cwd: context.cwd, status: "declined"), persisted: false)
            setFlags([])
            return Self.toolReply("patch rejected by user")
        case .cancel:
            // No `item/completed` for the fileChange (note §5).
            setFlags([])
            try await pause()
            usage()
            end(status: "interrupted", items: [], itemsView: "notLoaded")
            return nil
        case .malformed:
            completeItem(Shapes.fileChange(id: itemID, cwd: context.cwd, status: "failed"), persisted: false)
            setFlags([])
            return Self.toolReply("approval request failed")
        }
    }

    // MARK: - question

    static let questionID = "choice"

    /// `item/tool/requestUserInput` with one question and two options; the reply quotes the answers.
    func question() async throws -> String {
        try await pause()
        setFlags(["waitingOnUserInput"])
        let answer = try await ask("item/tool/requestUserInput", [
            "threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(CodexAppServerIDs.callID()),
            "questions": [[
                "id": .string(Self.questionID), "header": "Choice", "question": "Which way should the simulator go?",
                "isOther": false, "isSecret": false,
                "options": [
                    ["label": "left", "description": "Take the left path"],
                    ["label": "right", "description": "Take the right path"],
                ],
            ]],
        ])
        setFlags([])
        let answers = answer["answers"]?[Self.questionID]?["answers"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return "Fake model reply. You answered: " + answers.joined(separator: ", ")
    }
}
