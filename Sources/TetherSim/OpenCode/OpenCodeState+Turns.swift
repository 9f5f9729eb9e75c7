import Foundation

/// One running turn of a session: which script plays, where it is waiting, what phase 2 needs.
/// A prompt OpenCode took while a turn was running: its user message is stored (and announced)
/// at once; the running loop answers the newest such message when its turn is done, with no
/// idle between (`SessionPrompt.prompt` writes the message, then joins the running loop).
struct QueuedPrompt: Sendable {
    let prompt: OpenCodePrompt
    let userMessageID: String
}

struct OpenCodeTurn: Sendable {
    enum Waiting: Sendable, Equatable {
        case permission(String)
        case question(String)
    }

    enum Phase: Sendable {
        case begin
        case permissionGranted
        case permissionRejected
        case questionAnswered([[String]])
        case questionDismissed
    }

    let sessionID: String
    let directory: String
    let prompt: OpenCodePrompt
    let scenario: OpenCodeScenario
    var task: Task<Void, Never>?
    var waiting: Waiting?
    var aborting = false
    var userMessageID = ""
    /// The first assistant message and the tool part that waits on the user, for phase 2.
    var assistant: OrderedJSON?
    var tool: OrderedJSON?
    /// Assistant text parts started so far (the drop fault fires in the first).
    var textParts = 0
}

/// Turn lifecycle: start (or queue), wait for replies, resume, abort, end on idle.
extension OpenCodeState {
    enum ReplyOutcome: Sendable {
        case done
        case notFound
    }

    // MARK: Sessions

    func createSession(title: String?, parentID: String?, directory: String) -> OrderedJSON {
        let now = epochMilliseconds()
        let stamp = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let info = OpenCodeFixtures.session(
            id: ids.descending("ses"), slug: OpenCodeFixtures.slug(), directory: directory,
            title: title ?? "New session - \(stamp)", version: serverVersion,
            created: now, updated: now, parentID: parentID
        )
        emitSession("session.created", info)
        return info
    }

    func updateSession(_ id: String, title: String?) -> OrderedJSON? {
        guard var info = sessions[id] else { return nil }
        if let title { info["title"] = .string(title) }
        info["time"]?["updated"] = .int(epochMilliseconds())
        emitSession("session.updated", info)
        return info
    }

    func deleteSession(_ id: String) async -> Bool {
        guard sessions[id] != nil else { return false }
        _ = await abort(id)
        guard let info = sessions[id] else { return true }
        emitSession("session.deleted", info)
        return true
    }

    // MARK: Prompts

    /// `prompt_async`: starts a turn; while one runs, stores the user message at once and queues
    /// the prompt behind it (see `QueuedPrompt`). False: no such session.
    func prompt(_ sessionID: String, _ prompt: OpenCodePrompt) -> Bool {
        guard sessions[sessionID] != nil else { return false }
        if turns[sessionID] != nil {
            let userID = emitUserMessage(sessionID, prompt, directory: directory(ofSession: sessionID) ?? options.directory)
            queuedPrompts[sessionID, default: []].append(QueuedPrompt(prompt: prompt, userMessageID: userID))
        } else {
            startTurn(sessionID, prompt)
        }
        return true
    }

    /// The prompt's user message and its text part; returns the message id.
    func emitUserMessage(_ sessionID: String, _ prompt: OpenCodePrompt, directory: String) -> String {
        let user = OpenCodeFixtures.userMessage(id: ids.ascending("msg"), sessionID: sessionID, created: epochMilliseconds(), prompt: prompt)
        let userID = user["id"]?.stringValue ?? ""
        emitMessage(user, directory: directory)
        var text = OpenCodeFixtures.part(id: ids.ascending("prt"), sessionID: sessionID, messageID: userID, type: "text")
        text["text"] = .string(prompt.text)
        emitPart(text, directory: directory)
        return userID
    }

    /// `answering`: the user message already stored for a queued prompt.
    private func startTurn(_ sessionID: String, _ prompt: OpenCodePrompt, answering userMessageID: String? = nil) {
        let directory = directory(ofSession: sessionID) ?? options.directory
        let scenario = options.scenario ?? OpenCodeScenario.forPrompt(prompt.text)
        turns[sessionID] = OpenCodeTurn(sessionID: sessionID, directory: directory, prompt: prompt, scenario: scenario)
        // OpenCode stores the user message before it runs anything (here: before the first pace).
        turns[sessionID]?.userMessageID = userMessageID ?? emitUserMessage(sessionID, prompt, directory: directory)
        runPhase(sessionID, .begin)
    }

    /// Plays one phase of the turn's script in its own task (so abort can cancel it).
    func runPhase(_ sessionID: String, _ phase: OpenCodeTurn.Phase) {
        turns[sessionID]?.task = Task {
            do {
                try await self.play(sessionID, phase)
            } catch is CancellationError {
                // abort() takes over from here.
            } catch {
                self.logger.error("scripted turn failed", metadata: ["session": "\(sessionID)", "error": "\(error)"])
            }
            self.phaseEnded(sessionID)
        }
    }

    private func phaseEnded(_ sessionID: String) {
        turns[sessionID]?.task = nil
    }

    /// The turn is over: idle — unless prompts were queued meanwhile: then, as OpenCode's loop
    /// does, it goes straight on to answer the newest of them (the older ones are context).
    func finishTurn(_ sessionID: String) async throws {
        try await pace()
        guard turns[sessionID] != nil else { return }
        if let next = queuedPrompts.removeValue(forKey: sessionID)?.last {
            turns[sessionID] = nil
            startTurn(sessionID, next.prompt, answering: next.userMessageID)
            return
        }
        emitIdle(sessionID, directory: turns[sessionID]?.directory ?? options.directory)
        turns[sessionID] = nil
    }

    // MARK: Replies

    /// `POST /permission/{id}/reply` and the legacy per-session route.
    func replyPermission(_ requestID: String, reply: String, sessionID expected: String? = nil) -> ReplyOutcome {
        guard let request = pendingPermissions.first(where: { $0.id == requestID }),
              expected == nil || request.sessionID == expected else { return .notFound }
        let sessionID = request.sessionID
        let directory = directory(ofSession: sessionID) ?? options.directory
        emitPermissionReplied(id: requestID, sessionID: sessionID, reply: reply, directory: directory)
        if reply == "always" {
            let patterns = request.json["always"]?.arrayValue ?? request.json["pattern"]?.arrayValue ?? []
            allowedPatterns[directory, default: []].formUnion(patterns.compactMap(\.stringValue))
        }
        guard let turn = turns[sessionID], turn.waiting == .permission(requestID), !turn.aborting else { return .done }
        turns[sessionID]?.waiting = nil
        runPhase(sessionID, reply == "reject" ? .permissionRejected : .permissionGranted)
        return .done
    }

    /// `POST /question/{id}/reply` (answers) or `/reject` (nil).
    func replyQuestion(_ requestID: String, answers: [[String]]?) -> ReplyOutcome {
        guard let request = pendingQuestions.first(where: { $0.id == requestID }) else { return .notFound }
        let sessionID = request.sessionID
        let directory = directory(ofSession: sessionID) ?? options.directory
        if let answers {
            let list: [OrderedJSON] = answers.map { .array($0.map { .string($0) }) }
            emit("question.replied", [
                "sessionID": .string(sessionID), "requestID": .string(requestID), "answers": .array(list),
            ], directory: directory)
        } else {
            emit("question.rejected", ["sessionID": .string(sessionID), "requestID": .string(requestID)], directory: directory)
        }
        guard let turn = turns[sessionID], turn.waiting == .question(requestID), !turn.aborting else { return .done }
        turns[sessionID]?.waiting = nil
        runPhase(sessionID, answers.map { .questionAnswered($0) } ?? .questionDismissed)
        return .done
    }

    /// Whether an `always` reply already allows `command` in `directory` (`rm *` matches `rm -rf build`).
    func isAllowed(_ command: String, directory: String) -> Bool {
        (allowedPatterns[directory] ?? []).contains { pattern in
            if pattern.hasSuffix("*") { return command.hasPrefix(String(pattern.dropLast())) }
            return pattern == command
        }
    }

    // MARK: Abort

    /// `POST /session/{id}/abort`: stops the script wherever it is and plays the abort script.
    /// False: no such session. Returns once `session.idle` has been emitted.
    func abort(_ sessionID: String) async -> Bool {
        guard sessions[sessionID] != nil else { return false }
        queuedPrompts[sessionID] = nil
        guard let turn = turns[sessionID], !turn.aborting else { return true }
        turns[sessionID]?.aborting = true
        if let task = turn.task {
            task.cancel()
            await task.value
        }
        guard let turn = turns[sessionID] else { return true }
        playAbortScript(turn)
        turns[sessionID] = nil
        return true
    }

    /// Notes §8 "Abort script", derived from what is open in the REST projection: pending requests
    /// rejected, open tool parts errored, streaming text finalized, `MessageAbortedError`, idle.
    private func playAbortScript(_ turn: OpenCodeTurn) {
        let sessionID = turn.sessionID
        let directory = turn.directory
        let now = epochMilliseconds()
        for request in pendingPermissions where request.sessionID == sessionID {
            emitPermissionReplied(id: request.id, sessionID: sessionID, reply: "reject", directory: directory)
        }
        for request in pendingQuestions where request.sessionID == sessionID {
            emit("question.rejected", ["sessionID": .string(sessionID), "requestID": .string(request.id)], directory: directory)
        }
        let open = messages[sessionID]?.last { record in
            record.info["role"]?.stringValue == "assistant" && record.info["time"]?["completed"] == nil
        }
        if let open {
            for part in open.parts {
                if let closed = Self.closedForAbort(part, liveText: liveText, now: now) {
                    emitPart(closed, directory: directory)
                }
            }
        }
        emitSessionError(sessionID, OpenCodeFixtures.abortedError, directory: directory)
        if var info = open?.info {
            info["error"] = OpenCodeFixtures.abortedError
            info["time"]?["completed"] = .int(now)
            emitMessage(info, directory: directory)
        }
        emitIdle(sessionID, directory: directory)
    }

    /// The final snapshot of a part cut short by an abort, or nil if it was already finished.
    private static func closedForAbort(_ part: OrderedJSON, liveText: [String: String], now: Int) -> OrderedJSON? {
        var part = part
        switch part["type"]?.stringValue {
        case "text", "reasoning":
            guard part["time"]?["end"] == nil else { return nil }
            if let id = part["id"]?.stringValue, let text = liveText[id] {
                part["text"] = .string(text)
            }
            part["time"]?["end"] = .int(now)
            return part
        case "tool":
            guard let state = part["state"], let status = state["status"]?.stringValue,
                  status == "pending" || status == "running" else { return nil }
            let start = state["time"]?["start"] ?? .int(now)
            part["state"] = [
                "status": "error",
                "input": state["input"] ?? [:],
                "error": "Tool execution aborted",
                "time": ["start": start, "end": .int(now)],
            ]
            return part
        default:
            return nil
        }
    }
}
