import Foundation
import TetherCore
import TetherStreaming

/// `session/prompt`, `session/cancel` and the permission requests a turn raises.
extension ACPAgent {
    /// A prompt checked and recorded, not yet sent.
    struct PromptStart: Sendable {
        var session: String
        var text: String
    }

    /// Checks a `session/prompt` and records its run, as its line is read: a `session/cancel`
    /// that comes before the prompt's task runs then applies to it.
    func beginPrompt(_ params: JSONObject) throws -> PromptStart {
        let session = try requireOpenSession(params, for: "session/prompt")
        let text = try Self.promptText(params["prompt"]?.array ?? [])
        guard prompts[session] == nil else {
            throw JSONRPCError.invalidParams("session \(session) already has a prompt running; wait for its answer or send session/cancel")
        }
        try requireCapability(.send, "sending a prompt")
        runCounter += 1
        prompts[session] = PromptRun(id: runCounter)
        return PromptStart(session: session, text: text)
    }

    /// Sends the prompt begun by `beginPrompt` and follows its turn to the end.
    func prompt(_ start: PromptStart) async throws -> JSONValue {
        let session = start.session
        let end: PromptEnd
        if prompts[session]?.cancelRequested == true || Task.isCancelled {
            // Cancelled before it was sent: there is no turn to start or to abort.
            end = .cancelled
        } else {
            let stream = backend.sendAndFollow(SendRequest(session: session, text: start.text, raw: false))
            let follower = Task { await self.follow(stream, session: session) }
            prompts[session]?.follower = follower
            end = await withTaskCancellationHandler {
                await follower.value
            } onCancel: {
                follower.cancel()
            }
        }
        prompts[session]?.graceTimer?.cancel()
        prompts[session] = nil
        // The answer ends the turn for the editor: requests it still has open are moot.
        perform(permissions.turnEnded(session: session))
        switch end {
        case .completed: return ["stopReason": "end_turn"]
        case .cancelled: return ["stopReason": "cancelled"]
        case .failed(let error): throw error
        }
    }

    /// Streams the turn's events as updates until it ends.
    private func follow(_ stream: EventStream, session: String) async -> PromptEnd {
        var mapper = SessionUpdateMapper(session: session, mode: .live, answersQuestions: backend.capabilities.contains(.questions))
        do {
            for try await event in stream {
                if event.type == .turnStarted, let turn = event.turn, event.session == nil || event.session == session {
                    turnStarted(turn, session: session)
                }
                for action in mapper.map(event) {
                    switch action {
                    case .update(let update):
                        notify(session, update)
                    case .requestPermission(let ask):
                        let id = request("session/request_permission", params: ask.params)
                        permissions.asked(ask, requestID: id)
                    case .approvalResolved(let approval):
                        perform(permissions.resolved(approvalID: approval))
                    case .approvalNotAskable(let approval, let reason):
                        logger.warning("approval \(approval) cannot be put to the editor: \(reason); the turn waits until it is answered where the backend allows (`\(configuration.tether) approve \(approval)` or the backend's own client)")
                    case .turnEnded(let outcome, let error):
                        if prompts[session]?.cancelRequested == true { return .cancelled }
                        switch outcome {
                        // `cancelled` answers the editor's own session/cancel (above). A turn the
                        // backend ended so for another reason (a rejected permission ends an
                        // OpenCode 2 execution; an abort from another client) just ended.
                        case .completed, .cancelled: return .completed
                        case .failed:
                            return .failed(JSONRPCError(code: JSONRPCError.internalErrorCode,
                                                        message: "the turn failed: \(error ?? "the backend gave no reason")"))
                        }
                    }
                }
            }
            if Task.isCancelled || prompts[session]?.cancelRequested == true { return .cancelled }
            return .failed(JSONRPCError(code: JSONRPCError.internalErrorCode, message: """
                the backend's stream ended before the turn completed — the turn may still be running: \
                follow it with `\(configuration.tether) events --session \(session) --follow`
                """))
        } catch {
            if prompts[session]?.cancelRequested == true || error is CancellationError { return .cancelled }
            return .failed(Self.rpcError(error, doing: "the prompt"))
        }
    }

    private func turnStarted(_ turn: String, session: String) {
        guard var run = prompts[session], run.turn == nil else { return }
        run.turn = turn
        prompts[session] = run
        // A cancel that came before the backend named the turn may have found nothing to abort.
        if run.cancelRequested { abort(session: session, turn: turn) }
    }

    /// `session/cancel`: abort on the backend; the prompt answers `cancelled` when the turn ends,
    /// or after `cancelGrace` if the backend does not end it.
    func cancel(session: String) {
        guard var run = prompts[session] else {
            logger.debug("session/cancel for \(session) with no prompt running")
            return
        }
        guard !run.cancelRequested else { return }
        run.cancelRequested = true
        prompts[session] = run
        // Not sent yet (the cancel came right behind its prompt): the prompt answers `cancelled`
        // without sending it.
        guard run.follower != nil else { return }
        permissions.sessionCancelled(session)
        abort(session: session, turn: run.turn)
        let (grace, sleep, runID) = (configuration.cancelGrace, self.sleep, run.id)
        prompts[session]?.graceTimer = spawn {
            do { try await sleep(grace) } catch { return }  // the prompt ended first
            await self.cancelGraceOver(session: session, run: runID)
        }
    }

    private func abort(session: String, turn: String?) {
        guard backend.capabilities.contains(.abort) else {
            logger.warning("the \(backend.kind.rawValue) backend cannot abort a turn; the prompt stops following it")
            return
        }
        spawn {
            do {
                try await self.backend.abort(session: session, turn: turn)
            } catch {
                self.logger.warning("aborting the turn of session \(session) failed: \(error)")
            }
        }
    }

    private func cancelGraceOver(session: String, run runID: Int) {
        // The timer may have woken as its prompt ended, and the session may have a new prompt
        // by now: that one has its own grace.
        guard let run = prompts[session], run.id == runID else {
            logger.debug("the cancel grace of an earlier prompt of \(session) is over; that prompt has ended")
            return
        }
        logger.warning("the backend did not end the cancelled turn of \(session) in time; answering cancelled")
        run.follower?.cancel()
    }

    // MARK: Permission answers

    static func permissionAnswer(_ result: JSONValue) -> PermissionRequests.Answer {
        switch result["outcome"]?["outcome"]?.string {
        case "selected":
            guard let option = result["outcome"]?["optionId"]?.string else { return .unreadable }
            return .selected(optionID: option)
        case "cancelled": return .cancelled
        default: return .unreadable
        }
    }

    func editorAnswered(id: JSONValue, answer: PermissionRequests.Answer) {
        guard permissions.isOpen(id) else {
            logger.debug("an answer to request \(id.serialized), which is not open; ignored")
            return
        }
        perform(permissions.editorAnswered(requestID: id, answer))
    }

    func perform(_ actions: [PermissionRequests.Action]) {
        for action in actions {
            switch action {
            case .approve(let approval, let decision, let answers, let session):
                spawn { await self.send(ApprovalAnswer(decision: decision, answers: answers), to: approval, session: session) }
            case .withdraw(let requestID):
                output.send(.notification(method: "$/cancel_request", params: ["requestId": requestID]))
            }
        }
    }

    /// Sends the editor's decision to the backend. The editor counts its request as answered,
    /// so a failure must not pass silently: a passing one (the link, the tunnel) is retried; one
    /// that stays is told in the session, with how to answer instead — else the turn would sit
    /// waiting on an answer nobody knows was lost. An approval that is no longer pending needs
    /// no answer (someone else gave one, or its turn ended).
    func send(_ answer: ApprovalAnswer, to approval: String, session: String) async {
        let decision = answer.decision
        // What to type instead, should the answer not get through.
        let command = answer.answers.isEmpty ? "--decision \(decision.rawValue)"
            : answer.answers.flatMap { $0 }.map { "--answer " + shellQuote($0) }.joined(separator: " ")
        var delay = Self.approveRetryDelay
        for attempt in 1...Self.approveAttempts {
            do {
                _ = try await backend.approve(id: approval, answer: answer)
                logger.info("approval \(approval): \(decision.rawValue) sent")
                return
            } catch let error as TetherError where error.code == .notFound {
                logger.info("approval \(approval) was no longer pending: \(error.message)")
                return
            } catch {
                let tether = error as? TetherError
                logger.error("answering approval \(approval) with \(decision.rawValue) failed (attempt \(attempt)): \(error)")
                guard tether?.retryable == true, attempt < Self.approveAttempts, !Task.isCancelled else {
                    let why = tether?.message ?? "\(error)"
                    notify(session, ["sessionUpdate": "agent_message_chunk", "content": [
                        "type": "text",
                        "text": .string("\n\n[tether] Your answer (\(decision.rawValue)) did not reach the agent: \(why). It is still waiting; answer with `\(configuration.tether) approve \(shellQuote(approval)) \(command)`.\n\n"),
                    ]])
                    return
                }
                try? await Task.sleep(for: delay)
                delay *= 2
            }
        }
    }

    static let approveAttempts = 3
    static let approveRetryDelay: Duration = .milliseconds(500)

    // MARK: Prompt content

    /// The prompt's text for the backend: text blocks as they are, embedded text resources and
    /// resource links folded in (the backends take text only).
    static func promptText(_ blocks: [JSONValue]) throws -> String {
        var pieces: [String] = []
        for block in blocks {
            switch block["type"]?.string {
            case "text":
                pieces.append(block["text"]?.string ?? "")
            case "resource_link":
                guard let uri = block["uri"]?.string else { continue }
                pieces.append("@\(uri)")
            case "resource":
                let resource = block["resource"]
                guard let text = resource?["text"]?.string else {
                    throw JSONRPCError.invalidParams("binary embedded resources are not supported: the backend takes text")
                }
                pieces.append("<context uri=\"\(resource?["uri"]?.string ?? "")\">\n\(text)\n</context>")
            case let type:
                throw JSONRPCError.invalidParams("\(type ?? "untyped") content is not supported: the backend takes text (promptCapabilities says so)")
            }
        }
        let text = pieces.joined(separator: "\n")
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw JSONRPCError.invalidParams("session/prompt needs some text")
        }
        return text
    }
}
