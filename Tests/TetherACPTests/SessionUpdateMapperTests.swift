import Testing
import TetherCore
@testable import TetherACP
import TetherStreaming

@Suite struct SessionUpdateMapperTests {
    let s = "ses_1"

    func updates(_ actions: [SessionUpdateAction]) -> [JSONObject] {
        actions.compactMap { if case .update(let update) = $0 { update } else { nil } }
    }

    func chunks(_ actions: [SessionUpdateAction], _ kind: String = "agent_message_chunk") -> String {
        updates(actions).filter { $0["sessionUpdate"]?.string == kind }.compactMap { $0["content"]?["text"]?.string }.joined()
    }

    func run(_ mapper: inout SessionUpdateMapper, _ events: [Event]) -> [SessionUpdateAction] {
        events.flatMap { mapper.map($0) }
    }

    func text(_ part: String, role: PartRole, deltas: [String], final: String, kind: PartKind = .text) -> [Event] {
        var events = [Event.part(.partStarted, session: s, turn: "t", part: part, kind: kind,
                                 content: ["text": "", "role": .string(role.rawValue)])]
        events += deltas.map { Event.partDelta(session: s, turn: "t", part: part, kind: kind, delta: $0) }
        events.append(.part(.partCompleted, session: s, turn: "t", part: part, kind: kind,
                            content: ["text": .string(final), "role": .string(role.rawValue)]))
        return events
    }

    @Test func streamedTextIsSentOnceWhateverTheFinalPartRepeats() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let actions = run(&mapper, text("p1", role: .assistant, deltas: ["Hel", "lo"], final: "Hello!"))
        #expect(chunks(actions) == "Hello!")
        #expect(updates(actions).count == 3)
    }

    @Test func aMessageWithoutDeltasIsSentWholeFromItsCompletion() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        #expect(chunks(run(&mapper, text("p1", role: .assistant, deltas: [], final: "All at once"))) == "All at once")
    }

    @Test func reasoningIsAThoughtChunk() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let actions = run(&mapper, text("r1", role: .assistant, deltas: ["think"], final: "thinking", kind: .reasoning))
        #expect(chunks(actions, "agent_thought_chunk") == "thinking")
        #expect(chunks(actions).isEmpty)
    }

    @Test func theUsersTextIsReplayedButNotEchoedLive() {
        var live = SessionUpdateMapper(session: s, mode: .live)
        #expect(run(&live, text("u1", role: .user, deltas: [], final: "hi")).isEmpty)
        var replay = SessionUpdateMapper(session: s, mode: .replay)
        #expect(chunks(run(&replay, text("u1", role: .user, deltas: [], final: "hi")), "user_message_chunk") == "hi")
    }

    @Test func otherSessionsEventsAreDropped() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let other = Event.partDelta(session: "ses_other", turn: "t", part: "p", kind: .text, delta: "secret")
        #expect(mapper.map(other).isEmpty)
        #expect(mapper.map(.turnCompleted(session: "ses_other", turn: "t", outcome: .completed)).isEmpty)
    }

    @Test func aCommandIsAToolCallThenAnUpdateWithItsOutput() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let started = mapper.map(.part(.partStarted, session: s, turn: "t", part: "call_1", kind: .command,
                                       content: ["command": "npm test", "status": "running"]))
        #expect(updates(started) == [["sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "npm test",
                                      "kind": "execute", "status": "in_progress"]])
        let output = mapper.map(.partDelta(session: s, turn: "t", part: "call_1", kind: .command, field: "output", delta: "ok"))
        #expect(updates(output).first?["content"]?[0]?["content"]?["text"] == "ok")
        let done = mapper.map(.part(.partCompleted, session: s, turn: "t", part: "call_1", kind: .command,
                                    content: ["command": "npm test", "status": "completed", "output": "ok\n"]))
        #expect(updates(done) == [["sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed",
                                   "title": "npm test",
                                   "content": [["type": "content", "content": ["type": "text", "text": "ok\n"]]]]])
        // Completed once: a repeated completion sends nothing.
        #expect(mapper.map(.part(.partCompleted, session: s, turn: "t", part: "call_1", kind: .command,
                                 content: ["status": "completed"])).isEmpty)
    }

    @Test func runningOutputIsShownAtMostFourTimesASecondWithEverythingSoFar() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        _ = mapper.map(.part(.partStarted, session: s, turn: "t", part: "c", kind: .command, content: ["command": "make"]))
        func delta(_ text: String, at ts: Double) -> [JSONObject] {
            var event = Event.partDelta(session: s, turn: "t", part: "c", kind: .command, field: "output", delta: text)
            event.ts = ts
            return updates(mapper.map(event))
        }
        #expect(delta("a\n", at: 1000).first?["content"]?[0]?["content"]?["text"] == "a\n")
        #expect(delta("b\n", at: 1100).isEmpty)
        #expect(delta("c\n", at: 1250).first?["content"]?[0]?["content"]?["text"] == "a\nb\nc\n")
        var replay = SessionUpdateMapper(session: s, mode: .replay)
        #expect(replay.map(.partDelta(session: s, turn: "t", part: "c", kind: .command, field: "output", delta: "x")).isEmpty)
    }

    @Test func aDeclinedToolFails() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let done = mapper.map(.part(.partCompleted, session: s, turn: "t", part: "f1", kind: .fileChange,
                                    content: ["status": "declined", "changes": [["path": "a.txt", "kind": "add", "diff": "+x"]]]))
        let last = updates(done).last
        #expect(updates(done).first?["sessionUpdate"] == "tool_call")
        #expect(last?["status"] == "failed")
        #expect(last?["content"]?[0]?["content"]?["text"]?.string?.contains("+x") == true)
    }

    func approval(item: String? = nil, tool: JSONObject? = nil, options: [Decision] = [.accept, .acceptForSession, .decline, .cancel]) -> Event {
        var extra: JSONObject = [:]
        if let item { extra["item"] = .string(item) }
        if let tool { extra["tool"] = .object(tool) }
        return .approvalRequested(Approval(id: "job~a1", session: s, turn: "t", kind: .command, title: "Run rm -rf build",
                                           command: "rm -rf build", options: options, risk: .high, extra: extra))
    }

    @Test func anApprovalForAnAnnouncedItemAsksAboutThatToolCall() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        _ = mapper.map(.part(.partStarted, session: s, turn: "t", part: "it_c6", kind: .command, content: ["command": "rm -rf build"]))
        let actions = mapper.map(approval(item: "it_c6"))
        #expect(actions.count == 1)
        guard case .requestPermission(let ask) = actions.first else {
            Issue.record("no permission request: \(actions)")
            return
        }
        #expect(ask.toolCall["toolCallId"] == "it_c6")
        #expect(ask.options.map(\.kind) == ["allow_once", "allow_always", "reject_once"])
        #expect(ask.params["sessionId"] == .string(s))
    }

    @Test func anOpenCodeApprovalFindsItsPartThroughTheCallID() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        _ = mapper.map(.part(.partStarted, session: s, turn: "t", part: "prt_9", kind: .command,
                             content: ["tool": "bash", "call_id": "call_x", "status": "pending"]))
        let actions = mapper.map(approval(tool: ["messageID": "msg_1", "callID": "call_x"]))
        guard case .requestPermission(let ask) = actions.last else {
            Issue.record("no permission request: \(actions)")
            return
        }
        #expect(actions.count == 1)
        #expect(ask.toolCall["toolCallId"] == "prt_9")
    }

    @Test func anApprovalBeforeItsPartAnnouncesTheToolCallFirst() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let actions = mapper.map(approval(item: "it_7"))
        #expect(actions.count == 2)
        #expect(updates(actions).first?["sessionUpdate"] == "tool_call")
        #expect(updates(actions).first?["toolCallId"] == "it_7")
        if case .requestPermission = actions.last {} else { Issue.record("no permission request last: \(actions)") }
        // The part's own start is now an update of the same call, not a second call.
        let started = updates(mapper.map(.part(.partStarted, session: s, turn: "t", part: "it_7", kind: .command,
                                               content: ["command": "rm -rf build", "status": "running"])))
        #expect(started.first?["sessionUpdate"] == "tool_call_update")
    }

    @Test func anApprovalWithNoACPOptionIsNotAsked() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let actions = mapper.map(approval(item: "it_8", options: []))
        #expect(actions.contains(.approvalNotAskable(id: "job~a1", reason: "its kind (command) offers no decision ACP can express")))
        #expect(!actions.contains { if case .requestPermission = $0 { true } else { false } })
    }

    @Test func resolutionOfAnAskedApprovalIsReportedOnce() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        _ = mapper.map(approval(item: "it_1"))
        let resolved = Event.approvalResolved(id: "job~a1", session: s, turn: "t", decision: "accept")
        #expect(mapper.map(resolved) == [.approvalResolved(id: "job~a1")])
        #expect(mapper.map(resolved).isEmpty)
        #expect(mapper.map(.approvalResolved(id: "never-asked", session: s, turn: "t", decision: "accept")).isEmpty)
    }

    /// No tool call is left spinning in the editor: one an approval announced under its own id
    /// ends with the approval; any still open ends with the turn.
    @Test func everyAnnouncedToolCallIsFinished() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let ownID = Event.approvalRequested(Approval(id: "q1", session: s, turn: "t", kind: .question, title: "Which dir?",
                                                     options: [], risk: .low))
        #expect(updates(mapper.map(ownID)).first?["toolCallId"] == "approval-q1")
        #expect(updates(mapper.map(.approvalResolved(id: "q1", session: s, turn: "t", decision: "rejected")))
            == [["sessionUpdate": "tool_call_update", "toolCallId": "approval-q1", "status": "failed"]])
        _ = mapper.map(.part(.partStarted, session: s, turn: "t", part: "it_9", kind: .command, content: ["command": "make", "status": "running"]))
        _ = mapper.map(.part(.partStarted, session: s, turn: "t", part: "it_3", kind: .command, content: ["command": "ls", "status": "running"]))
        _ = mapper.map(.part(.partCompleted, session: s, turn: "t", part: "it_3", kind: .command, content: ["command": "ls", "status": "completed"]))
        let end = mapper.map(.turnCompleted(session: s, turn: "t", outcome: .cancelled))
        #expect(end == [.update(["sessionUpdate": "tool_call_update", "toolCallId": "it_9", "status": "failed"]), .turnEnded(.cancelled, error: nil)])
    }

    @Test func theTurnsEndIsTheLastAction() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        #expect(mapper.map(.turnCompleted(session: s, turn: "t", outcome: .failed, error: "APIError: rate limited"))
            == [.turnEnded(.failed, error: "APIError: rate limited")])
        #expect(mapper.map(.partDelta(session: s, turn: "t", part: "late", kind: .text, delta: "late")).isEmpty)
    }

    @Test func replayLeavesOutApprovalsUsageAndTheEnd() {
        var mapper = SessionUpdateMapper(session: s, mode: .replay)
        #expect(mapper.map(approval(item: "x")).isEmpty)
        #expect(mapper.map(.usageUpdated(session: s, turn: "t", usage: Usage(inputTokens: 1, contextWindow: 10))).isEmpty)
        #expect(mapper.map(.turnCompleted(session: s, turn: "t", outcome: .completed)).isEmpty)
    }

    @Test func planAndUsage() {
        var mapper = SessionUpdateMapper(session: s, mode: .live)
        let plan = mapper.map(.planUpdated(session: s, turn: "t", steps: [
            ["step": "Remove build/", "status": "completed", "priority": "high"], ["step": "Rebuild", "status": "in_progress"],
        ]))
        #expect(updates(plan) == [["sessionUpdate": "plan", "entries": [
            ["content": "Remove build/", "priority": "high", "status": "completed"],
            ["content": "Rebuild", "priority": "medium", "status": "in_progress"],
        ]]])
        let usage = mapper.map(.usageUpdated(session: s, turn: "t", usage: Usage(inputTokens: 900, outputTokens: 70, cost: 0.5,
                                                                                  contextWindow: 200_000)))
        #expect(updates(usage) == [["sessionUpdate": "usage_update", "used": 970, "size": 200_000,
                                    "cost": ["amount": 0.5, "currency": "USD"]]])
        #expect(mapper.map(.usageUpdated(session: s, turn: "t", usage: Usage(inputTokens: 1))).isEmpty)
    }
}
