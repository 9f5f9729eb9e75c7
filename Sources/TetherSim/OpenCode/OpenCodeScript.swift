/// The scripted turns (notes §8 and §9), frame by frame. Each `step` waits `Options.pacing` (or
/// just checks for cancellation) and then emits, so an abort can stop a script between any two frames.
extension OpenCodeState {
    func pace() async throws {
        if options.pacing > .zero {
            try await Task.sleep(for: options.pacing)
        } else {
            try Task.checkCancellation()
        }
    }

    func play(_ sessionID: String, _ phase: OpenCodeTurn.Phase) async throws {
        guard let turn = turns[sessionID] else { return }
        switch (phase, turn.scenario) {
        case (.begin, _):
            try await beginTurn(turn)
        case (.permissionGranted, _):
            try await finishToolAndAnswer(
                turn, output: "", title: "rm -rf build", todo: "Remove the build directory",
                answer: "Done. The build directory has been removed."
            )
        case (.permissionRejected, _):
            try await failTool(turn, error: "The user rejected permission to use this specific tool call.")
        case (.questionAnswered(let answers), _):
            let choice = answers.first?.first ?? "build"
            try await finishToolAndAnswer(
                turn, output: "User answered: \(choice)", title: "Asked 1 question",
                todo: "Clean the \(choice) directory", answer: "Understood: I'll clean \(choice) and leave the rest alone."
            )
        case (.questionDismissed, _):
            try await failTool(turn, error: "The user dismissed this question")
        }
    }

    // MARK: Phase 1

    private func beginTurn(_ turn: OpenCodeTurn) async throws {
        let sessionID = turn.sessionID
        let directory = turn.directory
        let userID = turn.userMessageID  // stored when the prompt came (`startTurn`)
        if statuses[sessionID] == nil {  // a queued prompt's turn follows the last with no idle between
            try await pace()
            emitStatus(sessionID, "busy", directory: directory)
        }
        if var session = sessions[sessionID] {
            if session["title"]?.stringValue?.hasPrefix("New session") == true {
                session["title"] = .string(Self.title(from: turn.prompt.text))
            }
            session["time"]?["updated"] = .int(epochMilliseconds())
            try await pace()
            emitSession("session.updated", session)
        }

        switch turn.scenario {
        case .plain:
            try await plainReply(sessionID, parentID: userID)
        case .failed:
            try await failedReply(sessionID, parentID: userID)
        case .permission:
            try await askPermission(sessionID, parentID: userID)
        case .question:
            try await askQuestion(sessionID, parentID: userID)
        }
    }

    private func plainReply(_ sessionID: String, parentID: String) async throws {
        guard let turn = turns[sessionID] else { return }
        var assistant = try await startAssistant(turn, parentID: parentID)
        let text = "Hello from the OpenCode simulator. You said: \u{201C}\(turn.prompt.text)\u{201D}. "
            + "Nothing here needs a tool, so this streamed text is the whole answer."
        try await streamText(sessionID, messageID: assistant.id, type: "text", text: text)
        try await finishStep(assistant, reason: "stop", cost: 0.0009, tokens: OpenCodeFixtures.tokens(input: 640, output: 38))
        assistant.complete(finish: "stop", cost: 0.0009, tokens: OpenCodeFixtures.tokens(input: 640, output: 38))
        try await pace()
        emitMessage(assistant.info, directory: turn.directory)
        try await finishTurn(sessionID)
    }

    private func failedReply(_ sessionID: String, parentID: String) async throws {
        guard let turn = turns[sessionID] else { return }
        var assistant = try await startAssistant(turn, parentID: parentID)
        let error = OpenCodeFixtures.error(
            "APIError", "Overloaded: the provider is temporarily unable to serve this request.",
            extra: [("statusCode", 529), ("isRetryable", false)]
        )
        try await pace()
        emitSessionError(sessionID, error, directory: turn.directory)
        assistant.info["error"] = error
        assistant.info["time"]?["completed"] = .int(epochMilliseconds())
        try await pace()
        emitMessage(assistant.info, directory: turn.directory)
        try await finishTurn(sessionID)
    }

    private func askPermission(_ sessionID: String, parentID: String) async throws {
        guard let turn = turns[sessionID] else { return }
        let directory = turn.directory
        let assistant = try await startAssistant(turn, parentID: parentID)
        turns[sessionID]?.assistant = assistant.info
        try await streamText(
            sessionID, messageID: assistant.id, type: "reasoning",
            text: "The user wants the build directory removed; that takes `rm -rf build` in the project root."
        )
        try await streamText(sessionID, messageID: assistant.id, type: "text", text: "I'll remove the build directory.")

        let command = "rm -rf build"
        let input: OrderedJSON = ["command": .string(command), "description": "Remove build dir"]
        let tool = try await startTool(turn, messageID: assistant.id, tool: "bash", input: input)
        if isAllowed(command, directory: directory) {
            // An earlier `always` covers it: no question asked, like the real permission service.
            try await finishToolAndAnswer(
                turns[sessionID] ?? turn, output: "", title: command, todo: "Remove the build directory",
                answer: "Done. The build directory has been removed."
            )
            return
        }
        let requestID = ids.ascending("per")
        try await pace()
        emitPermissionRequest(
            id: requestID, sessionID: sessionID, messageID: assistant.id,
            callID: tool["callID"]?.stringValue ?? "", command: command, always: ["rm *"], directory: directory
        )
        turns[sessionID]?.waiting = .permission(requestID)
    }

    private func askQuestion(_ sessionID: String, parentID: String) async throws {
        guard let turn = turns[sessionID] else { return }
        let assistant = try await startAssistant(turn, parentID: parentID)
        turns[sessionID]?.assistant = assistant.info
        try await streamText(sessionID, messageID: assistant.id, type: "text", text: "I need to know which directory to clean.")
        let question: OrderedJSON = [
            "question": "Which directory should I clean?",
            "header": "Directory",
            "options": [
                ["label": "build", "description": "Compiled output of the debug build"],
                ["label": "dist", "description": "Packaged release artifacts"],
            ],
            "multiple": false,
        ]
        let tool = try await startTool(turn, messageID: assistant.id, tool: "question", input: ["questions": [question]])
        let requestID = ids.ascending("que")
        try await pace()
        emit("question.asked", [
            "id": .string(requestID),
            "sessionID": .string(sessionID),
            "questions": [question],
            "tool": ["messageID": .string(assistant.id), "callID": tool["callID"] ?? .null],
        ], directory: turn.directory)
        turns[sessionID]?.waiting = .question(requestID)
    }

    // MARK: Phase 2

    /// Tool completed, first message done with `tool-calls`, then a second assistant message with
    /// the same parent carries the answer (notes §9).
    private func finishToolAndAnswer(
        _ turn: OpenCodeTurn, output: String, title: String, todo: String, answer: String
    ) async throws {
        let sessionID = turn.sessionID
        let directory = turn.directory
        guard var tool = turns[sessionID]?.tool, let first = turns[sessionID]?.assistant else { return }
        let input = tool["state"]?["input"] ?? [:]
        let start = tool["state"]?["time"]?["start"] ?? .int(epochMilliseconds())
        tool["state"] = [
            "status": "completed",
            "input": input,
            "output": .string(output),
            "title": .string(title),
            "metadata": ["exit": 0, "output": .string(output)],
            "time": ["start": start, "end": .int(epochMilliseconds())],
        ]
        try await pace()
        emitPart(tool, directory: directory)
        try await pace()
        emitTodos(sessionID, [(todo, "completed", "high")], directory: directory)

        var assistant = AssistantDraft(info: first)
        let firstTokens = OpenCodeFixtures.tokens(input: 812, output: 64, reasoning: 18)
        try await finishStep(assistant, reason: "tool-calls", cost: 0.0021, tokens: firstTokens)
        assistant.complete(finish: "tool-calls", cost: 0.0021, tokens: firstTokens)
        try await pace()
        emitMessage(assistant.info, directory: directory)

        var second = try await startAssistant(turn, parentID: turn.userMessageID)
        try await streamText(sessionID, messageID: second.id, type: "text", text: answer)
        let secondTokens = OpenCodeFixtures.tokens(input: 901, output: 12, cacheRead: 812)
        try await finishStep(second, reason: "stop", cost: 0.0012, tokens: secondTokens)
        second.complete(finish: "stop", cost: 0.0012, tokens: secondTokens)
        try await pace()
        emitMessage(second.info, directory: directory)
        try await finishTurn(sessionID)
    }

    /// Reject variant (notes §8): tool error, message completed, idle.
    private func failTool(_ turn: OpenCodeTurn, error: String) async throws {
        let sessionID = turn.sessionID
        guard var tool = turns[sessionID]?.tool, let first = turns[sessionID]?.assistant else { return }
        let start = tool["state"]?["time"]?["start"] ?? .int(epochMilliseconds())
        tool["state"] = [
            "status": "error",
            "input": tool["state"]?["input"] ?? [:],
            "error": .string(error),
            "time": ["start": start, "end": .int(epochMilliseconds())],
        ]
        try await pace()
        emitPart(tool, directory: turn.directory)
        var assistant = AssistantDraft(info: first)
        assistant.complete(finish: "tool-calls", cost: 0.0019, tokens: OpenCodeFixtures.tokens(input: 812, output: 64, reasoning: 18))
        try await pace()
        emitMessage(assistant.info, directory: turn.directory)
        try await finishTurn(sessionID)
    }

    // MARK: Building blocks

    struct AssistantDraft {
        var info: OrderedJSON
        var id: String { info["id"]?.stringValue ?? "" }

        mutating func complete(finish: String, cost: Double, tokens: OrderedJSON) {
            info["cost"] = .double(cost)
            info["tokens"] = tokens
            info["finish"] = .string(finish)
            info["time"]?["completed"] = .int(epochMilliseconds())
        }
    }

    /// A new assistant message (same parent for every step of the turn) and its `step-start`.
    private func startAssistant(_ turn: OpenCodeTurn, parentID: String) async throws -> AssistantDraft {
        let info = OpenCodeFixtures.assistantMessage(
            id: ids.ascending("msg"), sessionID: turn.sessionID, parentID: parentID,
            created: epochMilliseconds(), prompt: turn.prompt, directory: turn.directory
        )
        try await pace()
        emitMessage(info, directory: turn.directory)
        let messageID = info["id"]?.stringValue ?? ""
        let stepStart = OpenCodeFixtures.part(id: ids.ascending("prt"), sessionID: turn.sessionID, messageID: messageID, type: "step-start")
        try await pace()
        emitPart(stepStart, directory: turn.directory)
        return AssistantDraft(info: info)
    }

    private func finishStep(_ assistant: AssistantDraft, reason: String, cost: Double, tokens: OrderedJSON) async throws {
        guard let sessionID = assistant.info["sessionID"]?.stringValue else { return }
        var part = OpenCodeFixtures.part(id: ids.ascending("prt"), sessionID: sessionID, messageID: assistant.id, type: "step-finish")
        part["reason"] = .string(reason)
        part["cost"] = .double(cost)
        part["tokens"] = tokens
        try await pace()
        emitPart(part, directory: directory(ofSession: sessionID) ?? options.directory)
    }

    /// A tool part, `pending` then `running`; remembered for phase 2.
    private func startTool(_ turn: OpenCodeTurn, messageID: String, tool name: String, input: OrderedJSON) async throws -> OrderedJSON {
        var tool = OpenCodeFixtures.part(id: ids.ascending("prt"), sessionID: turn.sessionID, messageID: messageID, type: "tool")
        tool["callID"] = .string("call_" + String(ids.ascending("c").dropFirst(2).suffix(10)))
        tool["tool"] = .string(name)
        tool["state"] = ["status": "pending", "input": [:], "raw": ""]
        try await pace()
        emitPart(tool, directory: turn.directory)
        tool["state"] = ["status": "running", "input": input, "time": ["start": .int(epochMilliseconds())]]
        try await pace()
        emitPart(tool, directory: turn.directory)
        turns[turn.sessionID]?.tool = tool
        return tool
    }

    /// Streams a text or reasoning part. Current servers: empty snapshot, one `message.part.delta`
    /// per chunk, final snapshot with `time.end`. Legacy: a snapshot with the accumulated text and
    /// the `delta` per chunk, then the final snapshot.
    private func streamText(_ sessionID: String, messageID: String, type: String, text: String) async throws {
        guard let turn = turns[sessionID] else { return }
        let directory = turn.directory
        var part = OpenCodeFixtures.part(id: ids.ascending("prt"), sessionID: sessionID, messageID: messageID, type: type)
        part["text"] = ""
        part["time"] = ["start": .int(epochMilliseconds())]
        var dropAfter: Int?
        if type == "text" {
            turns[sessionID]?.textParts += 1
            if options.faults.dropStreamMidTurn, turn.textParts == 0 { dropAfter = 2 }
        }
        if !options.legacy {
            try await pace()
            emitPart(part, directory: directory)
        }
        let chunks = OpenCodeFixtures.chunks(text)
        var accumulated = ""
        for (index, chunk) in chunks.enumerated() {
            accumulated += chunk
            try await pace()
            if options.legacy {
                var snapshot = part
                snapshot["text"] = .string(accumulated)
                emitPart(snapshot, delta: chunk, directory: directory)
            } else {
                emitDelta(part, chunk, directory: directory)
            }
            if let after = dropAfter, index + 1 == min(after, chunks.count) {
                dropAllStreams()
            }
        }
        part["text"] = .string(String(accumulated.reversed().drop(while: \.isWhitespace).reversed()))
        part["time"]?["end"] = .int(epochMilliseconds())
        try await pace()
        emitPart(part, directory: directory)
    }

    private static func title(from prompt: String) -> String {
        let line = prompt.split(separator: "\n").first.map(String.init) ?? prompt
        return line.count > 50 ? String(line.prefix(49)) + "…" : line
    }
}
