import Foundation

/// One running execution of a 2.x session: the input it answers, the scenario it plays (the same
/// `OpenCodeScenario`s as 1.x, chosen the same way), and where it waits on the user.
struct OpenCode2Turn: Sendable {
    enum Phase: Sendable {
        case begin
        case permission(decision: String)
        case form(answer: OrderedJSON?)
    }

    let sessionID: String
    let input: OpenCode2Input
    let scenario: OpenCodeScenario
    var task: Task<Void, Never>?
    /// The permission request or form the script waits on.
    var waitingOn: String?
    var interrupting = false
    /// The open assistant message and its content, for the next phase and for an interrupt.
    var assistantID: String?
    var toolCallID: String?
    /// Text streamed into the open text/reasoning item (live-only deltas), by ordinal.
    var liveText: [Int: String] = [:]
    /// Text deltas sent so far in this turn (the drop fault fires after the second).
    var textDeltasSent = 0
    var droppedStreams = false
}

/// Turns of the 2.x simulator (§3, §4.2): prompt → inbox → execution, scripted frame by frame.
/// Each step paces (or checks for cancellation) before it emits, so an interrupt can come
/// between any two frames.
extension OpenCode2State {
    // MARK: Prompts

    /// `POST …/prompt`: the inbox item. Idle: promoted at once and its execution starts; busy
    /// (`delivery: queue`): it waits until the running execution ends. nil: no such session.
    func prompt(_ sessionID: String, text: String, delivery: String) -> OrderedJSON? {
        guard sessions[sessionID] != nil else { return nil }
        let input = OpenCode2Input(id: ids.ascending("msg"), text: text, created: epochMilliseconds())
        emit("session.input.admitted", [
            "inputID": .string(input.id), "input": ["type": "user", "text": .string(text)],
        ], session: sessionID)
        if turns[sessionID] == nil {
            start(sessionID, input)
        } else {
            inbox[sessionID, default: []].append(input)
        }
        return [
            "id": .string(input.id), "sessionID": .string(sessionID), "type": "user",
            "payload": ["text": .string(text)], "delivery": .string(delivery), "time": ["created": .int(input.created)],
        ]
    }

    private func start(_ sessionID: String, _ input: OpenCode2Input) {
        appendMessage(["id": .string(input.id), "type": "user", "text": .string(input.text), "time": ["created": .int(input.created)]],
                      session: sessionID)
        emit("session.input.promoted", ["inputID": .string(input.id)], session: sessionID)
        let scenario = options.scenario ?? OpenCodeScenario.forPrompt(input.text)
        turns[sessionID] = OpenCode2Turn(sessionID: sessionID, input: input, scenario: scenario)
        run(sessionID, .begin)
    }

    private func run(_ sessionID: String, _ phase: OpenCode2Turn.Phase) {
        turns[sessionID]?.task = Task {
            do {
                try await self.play(sessionID, phase)
            } catch is CancellationError {
                // interrupt() takes over.
            } catch {
                self.logger.error("scripted 2.x turn failed", metadata: ["session": "\(sessionID)", "error": "\(error)"])
            }
            self.turns[sessionID]?.task = nil
        }
    }

    private func pace() async throws {
        if options.pacing > .zero { try await Task.sleep(for: options.pacing) } else { try Task.checkCancellation() }
    }

    /// Emits after the pace.
    private func step(_ type: String, _ data: OrderedJSON, _ sessionID: String) async throws {
        try await pace()
        emit(type, data, session: sessionID)
    }

    // MARK: Scripts

    private func play(_ sessionID: String, _ phase: OpenCode2Turn.Phase) async throws {
        guard let turn = turns[sessionID] else { return }
        switch phase {
        case .begin:
            try await step("session.execution.started", [:], sessionID)
            let message = try await openStep(sessionID)
            switch turn.scenario {
            case .plain:
                try await streamText(sessionID, message: message, ordinal: 0, "Fake model reply. You said: \(turn.input.text)")
                try await endStep(sessionID, message: message, finish: "stop")
                try await endExecution(sessionID, outcome: "succeeded")
            case .failed:
                try await streamText(sessionID, message: message, ordinal: 0, "Working on it")
                let error: OrderedJSON = ["type": "APIError", "message": "The model provider failed: simulated outage"]
                updateMessage(message, session: sessionID) { $0["error"] = error; $0["time"]?["completed"] = .int(epochMilliseconds()) }
                try await step("session.step.failed", ["assistantMessageID": .string(message), "error": error], sessionID)
                try await endExecution(sessionID, outcome: "failed", error: error)
            case .permission:
                try await streamReasoning(sessionID, message: message, ordinal: 0, "The user wants the build directory removed.")
                try await streamText(sessionID, message: message, ordinal: 1, "I'll remove the build directory.")
                let call = try await callTool(sessionID, message: message, ordinal: 2, name: "shell", input: ["command": "rm -rf build"])
                let request: OrderedJSON = [
                    "id": .string(ids.ascending("per")), "sessionID": .string(sessionID), "action": "shell",
                    "resources": ["rm -rf build"], "save": ["rm *"], "metadata": [:], "message": "Remove the build directory",
                    "source": ["type": "tool", "messageID": .string(message), "id": .string(call)],
                ]
                try await pace()
                permissions.append(request)
                turns[sessionID]?.waitingOn = request["id"]?.stringValue
                emit("permission.asked", request, session: sessionID)
            case .question:
                try await streamText(sessionID, message: message, ordinal: 0, "I need to know which directory to clean.")
                let call = try await callTool(sessionID, message: message, ordinal: 1, name: "question", input: ["questions": 1])
                let form: OrderedJSON = [
                    "id": .string(ids.ascending("frm")), "sessionID": .string(sessionID), "mode": "form",
                    "title": "Which directory should I clean?", "metadata": ["kind": "question", "callID": .string(call)],
                    "fields": [[
                        "key": "q0", "type": "string", "title": "Which directory should I clean?",
                        "options": [["value": "build", "label": "build"], ["value": "dist", "label": "dist"]], "custom": true,
                    ]],
                ]
                try await pace()
                forms.append(form)
                turns[sessionID]?.waitingOn = form["id"]?.stringValue
                emit("form.created", ["sessionID": .string(sessionID), "form": form], session: sessionID)
            }
        case .permission(let decision):
            guard let message = turn.assistantID, let call = turn.toolCallID else { return }
            if decision == "reject" {
                // A plain reject ends the turn (Waku 2.0.10, §3).
                try await failTool(sessionID, message: message, call: call, ordinal: 2,
                                   error: ["type": "PermissionRejectedError", "message": "The user rejected permission to use this tool call."])
                try await endStep(sessionID, message: message, finish: "tool-calls")
                try await endExecution(sessionID, outcome: "interrupted", reason: "user")
                return
            }
            try await succeedTool(sessionID, message: message, call: call, ordinal: 2, output: "")
            try await endStep(sessionID, message: message, finish: "tool-calls")
            let answer = try await openStep(sessionID)
            try await streamText(sessionID, message: answer, ordinal: 0, "Done. The build directory has been removed.")
            try await endStep(sessionID, message: answer, finish: "stop")
            try await endExecution(sessionID, outcome: "succeeded")
        case .form(let answer):
            guard let message = turn.assistantID, let call = turn.toolCallID else { return }
            guard let answer else {
                try await failTool(sessionID, message: message, call: call, ordinal: 1,
                                   error: ["type": "FormCancelledError", "message": "The user dismissed this question"])
                try await endStep(sessionID, message: message, finish: "tool-calls")
                try await endExecution(sessionID, outcome: "succeeded")
                return
            }
            let choice = answer["q0"]?.stringValue ?? answer["q0"]?.arrayValue?.first?.stringValue ?? "build"
            try await succeedTool(sessionID, message: message, call: call, ordinal: 1, output: "User answered: \(choice)")
            try await endStep(sessionID, message: message, finish: "tool-calls")
            let next = try await openStep(sessionID)
            try await streamText(sessionID, message: next, ordinal: 0, "Understood: I'll clean \(choice) and leave the rest alone.")
            try await endStep(sessionID, message: next, finish: "stop")
            try await endExecution(sessionID, outcome: "succeeded")
        }
    }

    // MARK: Steps and content

    private func openStep(_ sessionID: String) async throws -> String {
        let id = ids.ascending("msg")
        let model: OrderedJSON = sessions[sessionID]?["model"] ?? ["providerID": "anthropic", "id": "claude-sonnet-4"]
        try await pace()
        appendMessage(["id": .string(id), "type": "assistant", "agent": "build", "model": model, "content": [],
                       "time": ["created": .int(epochMilliseconds())]], session: sessionID)
        turns[sessionID]?.assistantID = id
        emit("session.step.started", ["assistantMessageID": .string(id), "agent": "build", "model": model], session: sessionID)
        return id
    }

    private func endStep(_ sessionID: String, message: String, finish: String) async throws {
        let tokens: OrderedJSON = ["input": 1200, "output": 85, "reasoning": 0, "cache": ["read": 0, "write": 0]]
        updateMessage(message, session: sessionID) {
            $0["finish"] = .string(finish)
            $0["cost"] = 0.0042
            $0["tokens"] = tokens
            $0["time"]?["completed"] = .int(epochMilliseconds())
        }
        try await step("session.step.ended", [
            "assistantMessageID": .string(message), "finish": .string(finish), "cost": 0.0042, "tokens": tokens,
        ], sessionID)
    }

    /// `session.execution.<outcome>` (durable), then the `idle` message that marks the boundary
    /// in history; then the next queued input, if any.
    private func endExecution(_ sessionID: String, outcome: String, error: OrderedJSON? = nil, reason: String? = nil) async throws {
        try await pace()
        finishExecution(sessionID, outcome: outcome, error: error, reason: reason)
    }

    func finishExecution(_ sessionID: String, outcome: String, error: OrderedJSON? = nil, reason: String? = nil) {
        var data: OrderedJSON = [:]
        if let error { data["error"] = error }
        if let reason { data["reason"] = .string(reason) }
        emit("session.execution.\(outcome)", data, session: sessionID)
        appendMessage(["id": .string(ids.ascending("msg")), "type": "idle", "outcome": .string(outcome),
                       "time": ["created": .int(epochMilliseconds())]], session: sessionID)
        turns[sessionID] = nil
        if var queued = inbox[sessionID], !queued.isEmpty {
            let next = queued.removeFirst()
            inbox[sessionID] = queued.isEmpty ? nil : queued
            start(sessionID, next)
        }
    }

    private func setContent(_ sessionID: String, message: String, ordinal: Int, _ item: OrderedJSON) {
        updateMessage(message, session: sessionID) { info in
            var content = info["content"]?.arrayValue ?? []
            if ordinal < content.count { content[ordinal] = item } else { content.append(item) }
            info["content"] = .array(content)
        }
    }

    private func streamText(_ sessionID: String, message: String, ordinal: Int, _ text: String) async throws {
        try await stream("text", sessionID, message: message, ordinal: ordinal, text)
    }

    private func streamReasoning(_ sessionID: String, message: String, ordinal: Int, _ text: String) async throws {
        try await stream("reasoning", sessionID, message: message, ordinal: ordinal, text)
    }

    /// `session.<kind>.started` → `.delta`s of about 8 characters (live-only) → `.ended {text}`.
    private func stream(_ kind: String, _ sessionID: String, message: String, ordinal: Int, _ text: String) async throws {
        let key: OrderedJSON = ["assistantMessageID": .string(message), "ordinal": .int(ordinal)]
        setContent(sessionID, message: message, ordinal: ordinal, ["type": .string(kind), "text": ""])
        try await step("session.\(kind).started", key, sessionID)
        for piece in Self.pieces(text) {
            var delta = key
            delta["delta"] = .string(piece)
            try await step("session.\(kind).delta", delta, sessionID)
            turns[sessionID]?.liveText[ordinal, default: ""] += piece
            if kind == "text" { turns[sessionID]?.textDeltasSent += 1 }
            if options.faults.dropStreamMidTurn, kind == "text", turns[sessionID]?.textDeltasSent == 2,
               turns[sessionID]?.droppedStreams == false {
                turns[sessionID]?.droppedStreams = true
                dropAllStreams()
            }
        }
        setContent(sessionID, message: message, ordinal: ordinal, ["type": .string(kind), "text": .string(text)])
        turns[sessionID]?.liveText[ordinal] = nil
        var ended = key
        ended["text"] = .string(text)
        try await step("session.\(kind).ended", ended, sessionID)
    }

    /// Two words a delta (each with the spaces after it), as the 1.x scripts stream.
    static func pieces(_ text: String) -> [String] {
        var pieces: [String] = []
        var current = ""
        var words = 0
        var inSpace = false
        for character in text {
            if character == " " {
                inSpace = true
            } else if inSpace {
                inSpace = false
                words += 1
                if words == 2 {
                    pieces.append(current)
                    current = ""
                    words = 0
                }
            }
            current.append(character)
        }
        if !current.isEmpty { pieces.append(current) }
        return pieces
    }

    private func callTool(_ sessionID: String, message: String, ordinal: Int, name: String, input: OrderedJSON) async throws -> String {
        let call = "call_" + ids.ascending("tl").dropFirst(3)
        turns[sessionID]?.toolCallID = call
        let now = epochMilliseconds()
        let raw = String(decoding: SSEResponse.dataFrame(input).dropFirst(6).dropLast(2), as: UTF8.self)
        setContent(sessionID, message: message, ordinal: ordinal, [
            "type": "tool", "id": .string(call), "name": .string(name),
            "state": ["status": "streaming", "input": .string("")], "time": ["created": .int(now)],
        ])
        try await step("session.tool.input.started", ["assistantMessageID": .string(message), "id": .string(call), "name": .string(name)], sessionID)
        try await step("session.tool.input.delta", ["assistantMessageID": .string(message), "id": .string(call), "delta": .string(raw)], sessionID)
        try await step("session.tool.input.ended", ["assistantMessageID": .string(message), "id": .string(call), "text": .string(raw)], sessionID)
        setContent(sessionID, message: message, ordinal: ordinal, [
            "type": "tool", "id": .string(call), "name": .string(name), "executed": true,
            "state": ["status": "running", "input": input, "metadata": [:]], "time": ["created": .int(now), "ran": .int(epochMilliseconds())],
        ])
        try await step("session.tool.called", [
            "assistantMessageID": .string(message), "id": .string(call), "name": .string(name), "input": input, "executed": true,
        ], sessionID)
        return call
    }

    private func succeedTool(_ sessionID: String, message: String, call: String, ordinal: Int, output: String) async throws {
        let content: OrderedJSON = [["type": "text", "text": .string(output)]]
        updateTool(sessionID, message: message, ordinal: ordinal) { state in
            state["status"] = "completed"
            state["content"] = content
        }
        try await step("session.tool.success", ["assistantMessageID": .string(message), "id": .string(call), "content": content], sessionID)
    }

    private func failTool(_ sessionID: String, message: String, call: String, ordinal: Int, error: OrderedJSON) async throws {
        try await pace()
        failToolNow(sessionID, message: message, call: call, ordinal: ordinal, error: error)
    }

    func failToolNow(_ sessionID: String, message: String, call: String, ordinal: Int, error: OrderedJSON) {
        updateTool(sessionID, message: message, ordinal: ordinal) { state in
            state["status"] = "error"
            state["error"] = error
        }
        emit("session.tool.failed", ["assistantMessageID": .string(message), "id": .string(call), "error": error], session: sessionID)
    }

    private func updateTool(_ sessionID: String, message: String, ordinal: Int, _ change: (inout OrderedJSON) -> Void) {
        updateMessage(message, session: sessionID) { info in
            guard var content = info["content"]?.arrayValue, ordinal < content.count, var state = content[ordinal]["state"] else { return }
            change(&state)
            content[ordinal]["state"] = state
            content[ordinal]["time"]?["completed"] = .int(epochMilliseconds())
            info["content"] = .array(content)
        }
    }

    // MARK: Replies

    enum ReplyOutcome: Sendable { case done, notFound, settled }

    /// `POST /api/session/:sid/permission/:rid/reply {decision}`.
    func replyPermission(session sessionID: String, request requestID: String, decision: String) -> ReplyOutcome {
        guard let index = permissions.firstIndex(where: {
            $0["id"]?.stringValue == requestID && $0["sessionID"]?.stringValue == sessionID
        }) else { return .notFound }
        permissions.remove(at: index)
        emit("permission.replied", ["sessionID": .string(sessionID), "requestID": .string(requestID), "reply": .string(decision)],
             session: sessionID)
        guard let turn = turns[sessionID], turn.waitingOn == requestID, !turn.interrupting else { return .done }
        turns[sessionID]?.waitingOn = nil
        run(sessionID, .permission(decision: decision))
        return .done
    }

    /// `POST …/form/:id/reply {answer}` (answer) or `DELETE …/form/:id` (nil).
    func replyForm(session sessionID: String, form formID: String, answer: OrderedJSON?) -> ReplyOutcome {
        guard let index = forms.firstIndex(where: {
            $0["id"]?.stringValue == formID && $0["sessionID"]?.stringValue == sessionID
        }) else { return .notFound }
        forms.remove(at: index)
        if let answer {
            emit("form.replied", ["id": .string(formID), "sessionID": .string(sessionID), "answer": answer], session: sessionID)
        } else {
            emit("form.cancelled", ["id": .string(formID), "sessionID": .string(sessionID)], session: sessionID)
        }
        guard let turn = turns[sessionID], turn.waitingOn == formID, !turn.interrupting else { return .done }
        turns[sessionID]?.waitingOn = nil
        run(sessionID, .form(answer: answer))
        return .done
    }

    // MARK: Interrupt

    /// `POST …/interrupt`: stops the script between two frames; pending requests are rejected and
    /// forms cancelled, open text ends with what streamed, an open tool fails, then
    /// `session.execution.interrupted {reason: user}`. nil: no such session; false: was idle.
    func interrupt(_ sessionID: String) async -> Bool? {
        guard sessions[sessionID] != nil else { return nil }
        inbox[sessionID] = nil
        guard let turn = turns[sessionID], !turn.interrupting else { return false }
        turns[sessionID]?.interrupting = true
        if let task = turn.task {
            task.cancel()
            await task.value
        }
        guard let turn = turns[sessionID] else { return true }
        for request in permissions where request["sessionID"]?.stringValue == sessionID {
            emit("permission.replied", ["sessionID": .string(sessionID), "requestID": request["id"] ?? "", "reply": "reject"], session: sessionID)
        }
        permissions.removeAll { $0["sessionID"]?.stringValue == sessionID }
        for form in forms where form["sessionID"]?.stringValue == sessionID {
            emit("form.cancelled", ["id": form["id"] ?? "", "sessionID": .string(sessionID)], session: sessionID)
        }
        forms.removeAll { $0["sessionID"]?.stringValue == sessionID }
        if let message = turn.assistantID, let info = self.message(message, session: sessionID) {
            for (ordinal, item) in (info["content"]?.arrayValue ?? []).enumerated() {
                switch item["type"]?.stringValue {
                case "text", "reasoning":
                    guard let live = turn.liveText[ordinal], let kind = item["type"]?.stringValue else { continue }
                    setContent(sessionID, message: message, ordinal: ordinal, ["type": .string(kind), "text": .string(live)])
                    emit("session.\(kind).ended", ["assistantMessageID": .string(message), "ordinal": .int(ordinal), "text": .string(live)],
                         session: sessionID)
                case "tool":
                    let status = item["state"]?["status"]?.stringValue
                    guard status == "streaming" || status == "running", let call = item["id"]?.stringValue else { continue }
                    failToolNow(sessionID, message: message, call: call, ordinal: ordinal,
                                error: ["type": "AbortedError", "message": "Tool execution aborted"])
                default:
                    continue
                }
            }
            updateMessage(message, session: sessionID) { $0["time"]?["completed"] = .int(epochMilliseconds()) }
        }
        finishExecution(sessionID, outcome: "interrupted", reason: "user")
        return true
    }
}
