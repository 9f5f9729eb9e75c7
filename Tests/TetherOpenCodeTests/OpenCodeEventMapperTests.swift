import Testing
import TetherCore
@testable import TetherOpenCode
import TetherStreaming

@Suite struct OpenCodeEventMapperTests {
    let session = "ses_fe1d0c3a2b11Qm8xT2aLk9pQ1z"

    @Test func mapsACurrentEraPermissionTurn() throws {
        var mapper = OpenCodeEventMapper()
        mapper.contextWindows = ["anthropic/claude-sonnet-4": 200_000]
        let events = try Transcript.map(Transcript.frames("current-permission-turn"), into: &mapper)

        let started = events.of(.turnStarted)
        #expect(started.count == 1)
        #expect(started.first?.turn == "msg_a001")
        #expect(started.first?.data["model"] == "anthropic/claude-sonnet-4")

        // Every part completes exactly once, with its final content.
        let completed = events.of(.partCompleted)
        #expect(completed.map(\.part) == ["prt_a001", "prt_a002", "prt_a003", "prt_a004", "prt_a005", "prt_a006"])
        #expect(Set(completed.compactMap(\.part)).count == completed.count)
        #expect(events.completedTexts == ["Clean the build dir and say done", "I'll remove the build directory.", "Done."])
        #expect(completed[0].data["role"] == "user")
        #expect(completed[2].data["role"] == "assistant")
        let command = completed[3]
        #expect(command.data["kind"] == "command")
        #expect(command.data["command"] == "rm -rf build")
        #expect(command.data["status"] == "completed")
        #expect(command.data["exit_code"] == 0)
        #expect(completed.allSatisfy { $0.turn == "msg_a001" && $0.session == session })

        // Deltas assemble to the final text.
        #expect(events.assembledDeltas["prt_a003"] == "I'll remove the build directory.")
        #expect(events.assembledDeltas["prt_a006"] == "Done.")

        let approval = try #require(events.of(.approvalRequested).first)
        #expect(approval.data["id"]?.string == CompositeID.join([session, "per_b001"]))
        #expect(approval.data["kind"] == "permission")
        #expect(approval.data["risk"] == "high")
        #expect(approval.data["patterns"] == ["rm -rf build"])
        #expect(approval.data["options"] == ["accept", "accept_for_session", "decline", "cancel"])
        #expect(approval.turn == "msg_a001")
        let resolved = try #require(events.of(.approvalResolved).first)
        #expect(resolved.data["id"] == approval.data["id"])
        #expect(resolved.data["decision"] == "accept")

        // The first assistant message finishing with tool-calls does not end the turn; idle does, once.
        let done = events.of(.turnCompleted)
        #expect(done.count == 1)
        #expect(done.first?.data["status"] == "completed")
        #expect(done.first?.data["usage"]?["input_tokens"] == 900)
        #expect(done.first?.data["usage"]?["context_window"] == 200_000)
        #expect(events.lastIndex { $0.type == .turnCompleted }! > events.lastIndex { $0.type == .partCompleted }!)

        // Usage replaces (one per change, the duplicate message.updated adds nothing).
        #expect(events.of(.usageUpdated).map { $0.data["input_tokens"] } == [812, 900])
        #expect(events.of(.sessionStatus).filter { $0.session == session }.compactMap { $0.data["status"]?.string } == ["busy", "waiting_approval", "busy", "idle"])
    }

    /// A prompt sent while a turn runs: OpenCode stores its user message at once and answers it
    /// after the running turn, with no idle between. The running turn must not be cut short by
    /// the new message, nor its later parts credited to the new turn.
    @Test(arguments: [false, true])
    func aPromptSentDuringATurnStartsItsTurnWhenItIsAnswered(aborted: Bool) throws {
        let s = "ses_q"
        func frame(_ type: String, _ properties: String) -> JSONValue {
            try! JSONParser.parse(#"{"directory":"/d","payload":{"type":"\#(type)","properties":\#(properties)}}"#)
        }
        func user(_ id: String) -> JSONValue {
            frame("message.updated", #"{"sessionID":"\#(s)","info":{"id":"\#(id)","sessionID":"\#(s)","role":"user","time":{"created":1}}}"#)
        }
        func assistant(_ id: String, parent: String) -> JSONValue {
            frame("message.updated", #"{"sessionID":"\#(s)","info":{"id":"\#(id)","sessionID":"\#(s)","role":"assistant","parentID":"\#(parent)","time":{"created":2}}}"#)
        }
        func text(_ id: String, message: String, _ text: String, final: Bool = false) -> JSONValue {
            let end = final ? #","time":{"start":1,"end":2}"# : #","time":{"start":1}"#
            return frame("message.part.updated", #"{"sessionID":"\#(s)","part":{"id":"\#(id)","sessionID":"\#(s)","messageID":"\#(message)","type":"text","text":"\#(text)"\#(end)}}"#)
        }
        func delta(_ part: String, message: String, _ piece: String) -> JSONValue {
            frame("message.part.delta", #"{"sessionID":"\#(s)","messageID":"\#(message)","partID":"\#(part)","field":"text","delta":"\#(piece)"}"#)
        }
        var frames = [
            user("msg_u0"), text("prt_u0", message: "msg_u0", "first", final: true),
            frame("session.status", #"{"sessionID":"\#(s)","status":{"type":"busy"}}"#),
            assistant("msg_a0", parent: "msg_u0"), text("prt_a0", message: "msg_a0", ""),
            delta("prt_a0", message: "msg_a0", "Hello "),
            // The second prompt, mid-answer.
            user("msg_u1"), text("prt_u1", message: "msg_u1", "second", final: true),
            delta("prt_a0", message: "msg_a0", "world"),
            text("prt_a0", message: "msg_a0", "Hello world", final: true),
        ]
        if aborted {
            frames += [frame("session.error", #"{"sessionID":"\#(s)","error":{"name":"MessageAbortedError","data":{"message":"aborted"}}}"#)]
        } else {
            frames += [assistant("msg_a1", parent: "msg_u1"), text("prt_a1", message: "msg_a1", "Again", final: true)]
        }
        frames += [frame("session.status", #"{"sessionID":"\#(s)","status":{"type":"idle"}}"#)]
        var mapper = OpenCodeEventMapper()
        let events = try Transcript.map(frames, into: &mapper)

        let turns = events.filter { [.turnStarted, .turnCompleted].contains($0.type) }.map { "\($0.type.rawValue) \($0.turn ?? "")" }
        #expect(turns == ["turn.started msg_u0", "turn.completed msg_u0", "turn.started msg_u1", "turn.completed msg_u1"])
        #expect(events.of(.sessionStatus).map { $0.data["status"] } == ["busy", "idle"])
        // The first answer whole, in its own turn; the second prompt's text inside its turn.
        #expect(events.of(.partCompleted).first { $0.part == "prt_a0" }.map { "\($0.turn ?? "") \($0.data["text"]?.string ?? "")" } == "msg_u0 Hello world")
        #expect(events.filter { $0.part == "prt_a0" }.allSatisfy { $0.turn == "msg_u0" })
        let secondStarted = try #require(events.firstIndex { $0.type == .turnStarted && $0.turn == "msg_u1" })
        #expect(events.indices.filter { events[$0].part == "prt_u1" }.allSatisfy { $0 > secondStarted })
        #expect(events.filter { $0.part == "prt_u1" }.allSatisfy { $0.turn == "msg_u1" })
        let last = try #require(events.of(.turnCompleted).last)
        #expect(last.data["status"]?.string == (aborted ? "cancelled" : "completed"))
        if !aborted {
            #expect(events.filter { $0.part == "prt_a1" }.allSatisfy { $0.turn == "msg_u1" })
        }
        #expect(mapper.queuedPrompts.isEmpty)
    }

    @Test func legacyEraGivesTheSameNormalizedTurn() throws {
        var current = OpenCodeEventMapper()
        var legacy = OpenCodeEventMapper()
        let a = try Transcript.map(Transcript.frames("current-permission-turn"), into: &current)
        let b = try Transcript.map(Transcript.frames("legacy-permission-turn"), into: &legacy)
        func projection(_ events: [Event]) -> [String] {
            events.filter { [.turnStarted, .partCompleted, .approvalRequested, .approvalResolved, .turnCompleted].contains($0.type) }
                .map { "\($0.type.rawValue) \($0.turn ?? "") \($0.part ?? "") \($0.data["text"]?.string ?? "") \($0.data["status"]?.string ?? "") \($0.data["id"]?.string ?? "") \($0.data["decision"]?.string ?? "")" }
        }
        #expect(projection(a) == projection(b))
        #expect(b.assembledDeltas == a.assembledDeltas)
    }

    @Test func abortEndsTheTurnCancelledNotFailed() throws {
        var mapper = OpenCodeEventMapper()
        let events = try Transcript.map(Transcript.frames("current-abort"), into: &mapper)
        let done = try #require(events.of(.turnCompleted).first)
        #expect(done.data["status"] == "cancelled")
        #expect(events.of(.error).isEmpty)
        let tool = events.of(.partCompleted).first { $0.part == "prt_a004" }
        #expect(tool?.data["status"] == "failed")
        #expect(events.of(.approvalResolved).first?.data["decision"] == "decline")
    }

    @Test func aFailedAssistantMessageFailsTheTurn() throws {
        var mapper = OpenCodeEventMapper()
        let frames: [JSONValue] = [
            ["type": "message.updated", "properties": ["sessionID": "s", "info": ["id": "m1", "sessionID": "s", "role": "user"]]],
            ["type": "session.status", "properties": ["sessionID": "s", "status": ["type": "busy"]]],
            ["type": "session.error", "properties": ["sessionID": "s", "error": ["name": "APIError", "data": ["message": "rate limited"]]]],
            ["type": "session.idle", "properties": ["sessionID": "s"]],
        ]
        let events = try Transcript.map(frames, into: &mapper)
        #expect(events.of(.turnCompleted).first?.data["status"] == "failed")
        #expect(events.of(.turnCompleted).first?.data["error"] == "APIError: rate limited")
        #expect(events.of(.error).count == 1)
    }

    /// Parts whose final snapshot never comes complete when the turn ends, from what the mapper
    /// kept of their last snapshot: the text assembled from deltas, the role (text only) and
    /// `synthetic`, in the order a snapshot's content has them.
    @Test func partsLeftOpenCompleteWithTheirLastSnapshotAndAssembledText() throws {
        var mapper = OpenCodeEventMapper()
        func part(_ id: String, _ type: String, _ text: String, synthetic: Bool = false) -> JSONValue {
            var part: JSONObject = ["id": .string(id), "sessionID": "s", "messageID": "m2", "type": .string(type), "text": .string(text),
                                    "time": ["start": 1]]
            if synthetic { part["synthetic"] = true }
            return .object(part)
        }
        let frames: [JSONValue] = [
            ["type": "message.updated", "properties": ["sessionID": "s", "info": ["id": "m1", "sessionID": "s", "role": "user"]]],
            ["type": "message.updated", "properties": ["sessionID": "s", "info": ["id": "m2", "sessionID": "s", "role": "assistant", "parentID": "m1"]]],
            ["type": "message.part.updated", "properties": ["part": part("p1", "text", "Hel", synthetic: true), "delta": "Hel"]],
            ["type": "message.part.updated", "properties": ["part": part("p1", "text", "Hello", synthetic: true), "delta": "lo"]],
            ["type": "message.part.updated", "properties": ["part": part("p2", "reasoning", "")]],
            ["type": "message.part.delta", "properties": ["sessionID": "s", "messageID": "m2", "partID": "p2", "field": "text", "delta": "think"]],
            ["type": "session.idle", "properties": ["sessionID": "s"]],
        ]
        let events = try Transcript.map(frames, into: &mapper)
        let completed = events.of(.partCompleted)
        #expect(completed.map(\.part) == ["p1", "p2"])
        #expect(completed.first?.data == ["kind": "text", "text": "Hello", "role": "assistant", "synthetic": true])
        #expect(completed.first?.data.keys == ["kind", "text", "role", "synthetic"])
        #expect(completed.last?.data == ["kind": "reasoning", "text": "think"])
        #expect(events.of(.turnCompleted).count == 1)
    }

    /// The stream drops mid-text; after the reconnect REST says the turn is over. Every part
    /// completes once, with the exact text, and the turn completes once.
    @Test func resyncAfterADroppedStreamLosesAndRepeatsNothing() throws {
        let frames = try Transcript.frames("current-permission-turn")
        var mapper = OpenCodeEventMapper()
        var events = try Transcript.map(Array(frames[0..<9]), into: &mapper)   // up to the first delta
        let messages: [JSONValue] = [
            ["info": ["id": "msg_a001", "sessionID": .string(session), "role": "user"],
             "parts": [["id": "prt_a001", "sessionID": .string(session), "messageID": "msg_a001", "type": "text", "text": "Clean the build dir and say done"]]],
            ["info": ["id": "msg_a002", "sessionID": .string(session), "role": "assistant", "parentID": "msg_a001", "finish": "tool-calls",
                      "time": ["created": 1, "completed": 2]],
             "parts": [
                ["id": "prt_a002", "sessionID": .string(session), "messageID": "msg_a002", "type": "step-start"],
                ["id": "prt_a003", "sessionID": .string(session), "messageID": "msg_a002", "type": "text",
                 "text": "I'll remove the build directory.", "time": ["start": 1, "end": 2]],
                ["id": "prt_a004", "sessionID": .string(session), "messageID": "msg_a002", "type": "tool", "tool": "bash", "callID": "call_1",
                 "state": ["status": "completed", "input": ["command": "rm -rf build"], "output": "", "metadata": ["exit": 0]]],
             ]],
            ["info": ["id": "msg_a003", "sessionID": .string(session), "role": "assistant", "parentID": "msg_a001", "finish": "stop"],
             "parts": [["id": "prt_a006", "sessionID": .string(session), "messageID": "msg_a003", "type": "text", "text": "Done.",
                        "time": ["start": 3, "end": 4]]]],
        ]
        events += mapper.reconcile(session: session, messages: messages, busy: false)
        // A second resync (another reconnect) adds nothing.
        let again = mapper.reconcile(session: session, messages: messages, busy: false)
        #expect(again.filter { $0.type != .sessionStatus }.isEmpty)

        let completed = events.of(.partCompleted)
        #expect(Set(completed.compactMap(\.part)).count == completed.count)
        #expect(events.completedTexts == ["Clean the build dir and say done", "I'll remove the build directory.", "Done."])
        #expect(events.of(.turnCompleted).count == 1)
        #expect(events.of(.turnStarted).count == 1)
    }

    @Test func joiningMidTurnFromRESTStartsTheTurnOnce() {
        var mapper = OpenCodeEventMapper()
        let messages: [JSONValue] = [
            ["info": ["id": "old", "sessionID": "s", "role": "user"], "parts": []],
            ["info": ["id": "m9", "sessionID": "s", "role": "user"],
             "parts": [["id": "p1", "sessionID": "s", "messageID": "m9", "type": "text", "text": "go"]]],
            ["info": ["id": "a9", "sessionID": "s", "role": "assistant", "parentID": "m9"],
             "parts": [["id": "p2", "sessionID": "s", "messageID": "a9", "type": "text", "text": "work", "time": ["start": 1]]]],
        ]
        let first = mapper.reconcile(session: "s", messages: messages, busy: true)
        #expect(first.of(.turnStarted).map(\.turn) == ["m9"])
        #expect(first.assembledDeltas["p2"] == "work")
        let second = mapper.reconcile(session: "s", messages: messages, busy: true)
        #expect(second.of(.turnStarted).isEmpty)
        #expect(second.of(.partDelta).isEmpty)
        // An idle session we never saw running stays quiet.
        var fresh = OpenCodeEventMapper()
        #expect(fresh.reconcile(session: "s", messages: messages, busy: false).isEmpty)
    }

    /// The fault harness caught it: a reconnect right after `send` found the session still idle
    /// (OpenCode stores the user message before it marks the session busy) and ended the turn.
    @Test func idleWithTheUserMessageUnansweredIsATurnAboutToStart() {
        var mapper = OpenCodeEventMapper()
        let asked: [JSONValue] = [
            ["info": ["id": "m1", "sessionID": "s", "role": "user"],
             "parts": [["id": "p1", "sessionID": "s", "messageID": "m1", "type": "text", "text": "go"]]],
        ]
        let first = mapper.reconcile(session: "s", messages: asked, busy: false, adoptingAnyUserMessageBut: [])
        #expect(first.of(.turnStarted).map(\.turn) == ["m1"])
        #expect(first.of(.turnCompleted).isEmpty)
        #expect(mapper.reconcile(session: "s", messages: asked, busy: false).of(.turnCompleted).isEmpty)

        // The reply arrives: an idle session now means the turn is over.
        let answered = asked + [
            ["info": ["id": "a1", "sessionID": "s", "role": "assistant", "parentID": "m1", "finish": "stop"],
             "parts": [["id": "p2", "sessionID": "s", "messageID": "a1", "type": "text", "text": "done", "time": ["start": 1, "end": 2]]]],
        ]
        #expect(mapper.reconcile(session: "s", messages: answered, busy: false).of(.turnCompleted).count == 1)
    }

    @Test func aTurnLeftUnansweredForSeveralResyncsEnds() {
        var mapper = OpenCodeEventMapper()
        let asked: [JSONValue] = [["info": ["id": "m1", "sessionID": "s", "role": "user"], "parts": []]]
        var completed = 0
        for _ in 0..<OpenCodeEventMapper.unansweredIdleLimit {
            completed += mapper.reconcile(session: "s", messages: asked, busy: false, adoptingAnyUserMessageBut: []).of(.turnCompleted).count
        }
        #expect(completed == 1)
    }

    // MARK: Bounds

    func wire(_ type: String, _ properties: JSONValue) -> OpenCodeWireEvent {
        OpenCodeWireEvent(type: type, properties: properties, directory: nil, raw: nil)
    }

    func delta(_ part: String, _ text: String) -> OpenCodeWireEvent {
        wire("message.part.delta", ["sessionID": "s", "messageID": "m", "partID": .string(part), "field": "text", "delta": .string(text)])
    }

    /// Text past a part's limit streams but is not kept; a final snapshot that then arrives
    /// sends nothing already sent (it took up after what was kept, and sent the cut piece twice).
    @Test func aSnapshotAfterTheTextLimitRepeatsNoDelta() {
        var mapper = OpenCodeEventMapper()
        let big = String(repeating: "a", count: OpenCodeEventMapper.partTextLimit)
        #expect(mapper.map(delta("p", big)).of(.partDelta).count == 1)
        #expect(mapper.map(delta("p", "TAIL")).of(.partDelta).map { $0.data["delta"] } == ["TAIL"])
        #expect(mapper.textNotAssembled == 1)
        let final = mapper.map(wire("message.part.updated", ["part": ["id": "p", "sessionID": "s", "messageID": "m", "type": "text",
                                                                     "text": .string(big + "TAIL!"), "time": ["start": 1, "end": 2]]]))
        #expect(final.of(.partDelta).map { $0.data["delta"] } == ["!"])
        #expect(final.of(.partCompleted).first?.data["text"]?.string == big + "TAIL!")
    }

    /// Once a piece did not fit, later ones are not kept either: a part that completes from
    /// its deltas (no final snapshot) carries a clean prefix of its text, never one with a hole.
    @Test func textCutAtTheLimitHasNoHole() {
        var mapper = OpenCodeEventMapper()
        _ = mapper.map(wire("message.updated", ["info": ["id": "u", "sessionID": "s", "role": "user"]]))
        let almost = String(repeating: "a", count: OpenCodeEventMapper.partTextLimit - 2)
        _ = mapper.map(delta("p", almost))
        _ = mapper.map(delta("p", "XYZ"))  // does not fit
        _ = mapper.map(delta("p", "b"))    // would, after a hole
        #expect(mapper.textNotAssembled == 2)
        let idle = mapper.map(wire("session.idle", ["sessionID": "s"]))
        #expect(idle.of(.partCompleted).first?.data["text"]?.string == almost)
    }

    @Test func ignoresUnknownAndMalformedEvents() throws {
        var mapper = OpenCodeEventMapper()
        for type in ["sync", "lsp.updated", "session.next.text.delta", "pty.created", "tui.toast.show", "file.edited"] {
            #expect(mapper.map(OpenCodeWireEvent(type: type, properties: ["x": 1], directory: nil, raw: .null)).isEmpty)
        }
        #expect(mapper.map(OpenCodeWireEvent(type: "message.part.updated", properties: ["part": "not an object"], directory: nil, raw: .null)).isEmpty)
        #expect(mapper.map(OpenCodeWireEvent(type: "session.status", properties: .null, directory: nil, raw: .null)).isEmpty)
        #expect(throws: OpenCodeWireEvent.DecodeError.self) { try OpenCodeWireEvent.decode("{not json") }
        #expect(throws: OpenCodeWireEvent.DecodeError.self) { try OpenCodeWireEvent.decode("{\"payload\":{}}") }
    }

    @Test(arguments: [(Decision.accept, "once"), (.acceptForSession, "always"), (.decline, "reject"), (.cancel, "reject")])
    func mapsDecisions(decision: Decision, reply: String) throws {
        #expect(try OpenCodeDecision.reply(for: decision) == reply)
    }

    @Test func refusesAnAmendment() {
        #expect(throws: TetherError.self) { try OpenCodeDecision.reply(for: .acceptWithAmendment) }
    }
}
