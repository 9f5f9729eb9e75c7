import Foundation
import Testing
import TetherCore
import TetherNet
@testable import TetherOpenCode
import TetherStreaming

/// OpenCode 2.x without a socket: frames as protocols/opencode-v2.md §4 shows them, decoded,
/// mapped, and run through the stream machine.
@Suite struct OpenCode2Tests {
    static let session = "ses_0ab31d0a9fffQm8xT2aLk9pQ1z"
    static let message = "msg_0ab31d0c7001"
    static let input = "msg_0ab31d0ab001"


    /// A frame of the stream; durable kinds get the next seq unless `seq` is given.
    static func frame(_ type: String, _ data: JSONValue = [:], seq: Int? = nil) throws -> OpenCode2WireEvent {
        var data = data
        if data["sessionID"] == nil, var object = data.object {
            object["sessionID"] = .string(session)
            data = .object(object)
        }
        var envelope: JSONObject = ["id": "evt_1", "created": 1_789_578_563_801, "type": .string(type), "data": data]
        if let seq { envelope["durable"] = ["aggregateID": .string(session), "seq": .int(Int64(seq)), "version": 1] }
        return try OpenCode2WireDecoder.decode(.object(envelope))
    }

    /// A whole permission turn, as the 2.x simulator and the note's catalogue have it.
    static func permissionTurn() throws -> [OpenCode2WireEvent] {
        let key: JSONValue = ["assistantMessageID": .string(message), "ordinal": 0]
        func with(_ base: JSONValue, _ extra: JSONObject) -> JSONValue {
            var object = base.object ?? [:]
            for (name, value) in extra { object[name] = value }
            return .object(object)
        }
        return [
            try frame("session.input.admitted", ["inputID": .string(input), "input": ["type": "user", "text": "clean the build"]], seq: 1),
            try frame("session.input.promoted", ["inputID": .string(input)], seq: 2),
            try frame("session.execution.started", [:], seq: 3),
            try frame("session.step.started", ["assistantMessageID": .string(message), "agent": "build"], seq: 4),
            try frame("session.text.started", key, seq: 5),
            try frame("session.text.delta", with(key, ["delta": "I'll remove "])),
            try frame("session.text.delta", with(key, ["delta": "it."])),
            try frame("session.text.ended", with(key, ["text": "I'll remove it."]), seq: 6),
            try frame("session.tool.input.started", ["assistantMessageID": .string(message), "id": "call_1", "name": "shell"], seq: 7),
            try frame("session.tool.called", ["assistantMessageID": .string(message), "id": "call_1", "input": ["command": "rm -rf build"]], seq: 8),
            try frame("permission.asked", ["id": "per_1", "action": "shell", "resources": ["rm -rf build"], "save": ["rm *"],
                                           "source": ["type": "tool", "messageID": .string(message), "id": "call_1"]]),
            try frame("permission.replied", ["requestID": "per_1", "reply": "once"]),
            try frame("session.tool.success", ["assistantMessageID": .string(message), "id": "call_1", "content": [["type": "text", "text": "ok\n"]]], seq: 9),
            try frame("session.step.ended", ["assistantMessageID": .string(message), "finish": "stop", "cost": 0.01,
                                             "tokens": ["input": 10, "output": 5, "reasoning": 0, "cache": ["read": 0, "write": 0]]], seq: 10),
            try frame("session.execution.succeeded", [:], seq: 11),
        ]
    }

    func map(_ frames: [OpenCode2WireEvent], into mapper: inout OpenCode2Mapper) -> [Event] {
        frames.flatMap { mapper.map($0) }
    }

    // MARK: Decoder

    @Test func decodesTheEnvelopeAndItsDurableSeq() throws {
        let bytes = Array(#"{"id":"evt_1","created":1,"type":"session.text.ended","location":{"directory":"/p"},"durable":{"aggregateID":"ses_a","seq":42,"version":1},"data":{"sessionID":"ses_a","assistantMessageID":"msg_1","ordinal":0,"text":"Hello"}}"#.utf8)
        let wire = try OpenCode2WireDecoder.decode(bytes)
        #expect(wire.type == "session.text.ended")
        #expect(wire.session == "ses_a")
        #expect(wire.seq == 42)
        #expect(wire.isDurable)
        #expect(wire.directory == "/p")
        let live = try OpenCode2WireDecoder.decode(Array(#"{"type":"session.text.delta","data":{"sessionID":"ses_a","delta":"x"}}"#.utf8))
        #expect(live.seq == nil && !live.isDurable)
    }

    @Test func decodesTheLogSyncedMarker() throws {
        let marker = try OpenCode2WireDecoder.decode(Array(#"{"type":"log.synced","aggregateID":"ses_a","seq":7}"#.utf8))
        #expect(marker.isSyncedMarker && marker.session == "ses_a" && marker.seq == 7 && !marker.isDurable)
        let empty = try OpenCode2WireDecoder.decode(Array(#"{"type":"log.synced","aggregateID":"ses_a"}"#.utf8))
        #expect(empty.seq == nil)
    }

    @Test(arguments: [
        ("{not json", "not JSON"),
        ("[1,2]", "not an object"),
        ("null", "not an object"),
        (#"{"data":{}}"#, "without a type"),
        (#"{"type":42}"#, "without a type"),
        (#"{"type":"session.created","data":[1]}"#, "data is not an object"),
        (#"{"type":"session.text.ended","durable":{"aggregateID":"ses_a"},"data":{}}"#, "without a seq"),
        (#"{"type":"session.text.ended","durable":{"seq":-3},"data":{}}"#, "non-negative integer"),
        (#"{"type":"session.text.ended","durable":{"seq":"7"},"data":{}}"#, "non-negative integer"),
        (#"{"type":"log.synced","seq":1.5}"#, "non-negative integer"),
    ]) func malformedFramesAreClearErrors(_ input: String, _ expected: String) {
        #expect {
            try OpenCode2WireDecoder.decode(Array(input.utf8))
        } throws: { error in
            (error as? OpenCode2WireError)?.description.contains(expected) == true
        }
    }

    @Test func restEnvelopesAreUnwrapped() throws {
        #expect(OpenCode2WireDecoder.payload(["data": ["id": "ses_a"]])["id"] == "ses_a")
        #expect(OpenCode2WireDecoder.payload(["version": "2.0.17"])["version"] == "2.0.17")
        #expect(try OpenCode2WireDecoder.list(["data": [["id": "a"]], "cursor": [:]], what: "sessions").count == 1)
        #expect(throws: OpenCode2WireError.self) { try OpenCode2WireDecoder.list(["data": ["id": "a"]], what: "sessions") }
    }

    @Test func generationIsTheMajorVersionOfApiInfo() {
        #expect(OpenCode2Facts.isGeneration2(info: ["data": ["version": "2.0.17", "pid": 1]]))
        #expect(OpenCode2Facts.isGeneration2(info: ["version": "v2.1.0"]))
        #expect(!OpenCode2Facts.isGeneration2(info: ["data": ["version": "1.18.34"]]))
        #expect(!OpenCode2Facts.isGeneration2(info: ["healthy": true]))
        #expect(!OpenCode2Facts.isGeneration2(info: nil))
    }

    // MARK: Mapper

    @Test func aPermissionTurnMapsToTheDomainEvents() throws {
        var mapper = OpenCode2Mapper()
        let events = map(try Self.permissionTurn(), into: &mapper)
        let started = try #require(events.first { $0.type == .turnStarted })
        #expect(started.turn == Self.input)  // the prompt's inbox id is the turn's id
        let user = events.first { $0.type == .partCompleted && $0.data["role"] == "user" }
        #expect(user?.data["text"] == "clean the build")
        let text = events.first { $0.type == .partCompleted && $0.data["kind"] == "text" && $0.data["role"] == "assistant" }
        #expect(text?.data["text"] == "I'll remove it.")
        #expect(text?.part == OpenCode2Facts.partID(message: Self.message, ordinal: 0))
        #expect(events.filter { $0.type == .partDelta }.map { $0.data["delta"]?.string } == ["I'll remove ", "it."])
        let approval = try #require(events.first { $0.type == .approvalRequested })
        #expect(approval.data["id"]?.string == CompositeID.join([Self.session, "per_1"]))
        #expect(approval.data["command"] == "rm -rf build")
        #expect(approval.data["risk"] == "high")
        #expect(events.first { $0.type == .approvalResolved }?.data["decision"] == "accept")
        let command = events.first { $0.type == .partCompleted && $0.data["kind"] == "command" }
        #expect(command?.data["status"] == "completed")
        #expect(command?.data["output"] == "ok\n")
        #expect(events.first { $0.type == .usageUpdated }?.data["input_tokens"] == 10)
        #expect(events.last { $0.type == .turnCompleted }?.data["usage"]?["output_tokens"] == 5)
        let done = try #require(events.last { $0.type == .turnCompleted })
        #expect(done.data["status"] == "completed" && done.turn == Self.input)
        // Every event of the turn carries it; durable ones carry their seq as the cursor.
        #expect(events.filter { $0.type != .sessionStatus }.allSatisfy { $0.turn == Self.input })
        #expect(done.cursor == "11")
        let completed = events.filter { $0.type == .partCompleted }.compactMap(\.part)
        #expect(Set(completed).count == completed.count)
    }

    @Test func durableFramesSeenTwiceAreTakenOnce() throws {
        var mapper = OpenCode2Mapper()
        let frames = try Self.permissionTurn()
        let once = map(frames, into: &mapper)
        // The log replays everything after seq 3 (the global stream had them too).
        let again = map(frames.filter { ($0.seq ?? 0) > 3 }, into: &mapper)
        #expect(!once.isEmpty)
        #expect(again.allSatisfy { $0.type == .partDelta || $0.type == .approvalRequested || $0.type == .approvalResolved
            || $0.type == .sessionStatus } )
        #expect(!again.contains { $0.type == .partCompleted || $0.type == .turnCompleted || $0.type == .turnStarted })
        #expect(mapper.lastSeq[Self.session] == 11)
    }

    @Test func deltasLostInADisconnectAreWholeInTheEndedText() throws {
        var mapper = OpenCode2Mapper()
        let frames = try Self.permissionTurn().filter { $0.type != "session.text.delta" }
        let text = map(frames, into: &mapper).first { $0.type == .partCompleted && $0.data["role"] == "assistant" }
        #expect(text?.data["text"] == "I'll remove it.")
    }

    /// A part whose `*.ended` never comes completes with its deltas' text, kept up to a bound
    /// (the deltas themselves still go out), and a clean prefix: nothing after a piece that did
    /// not fit.
    @Test func deltaTextIsKeptWithinItsBound() throws {
        var mapper = OpenCode2Mapper()
        let key: JSONObject = ["assistantMessageID": .string(Self.message), "ordinal": 0]
        func delta(_ text: String) throws -> OpenCode2WireEvent {
            var data = key
            data["delta"] = .string(text)
            return try Self.frame("session.text.delta", .object(data))
        }
        let big = String(repeating: "x", count: OpenCode2Mapper.partTextLimit)
        let events = map([try Self.frame("session.input.promoted", ["inputID": "msg_9"], seq: 1),
                          try Self.frame("session.execution.started", [:], seq: 2),
                          try delta("ab"), try delta(big), try delta("cd"),
                          try Self.frame("session.execution.succeeded", [:], seq: 3)], into: &mapper)
        #expect(events.filter { $0.type == .partDelta }.count == 3)
        let text = events.first { $0.type == .partCompleted && $0.data["role"] == "assistant" }?.data["text"]?.string
        #expect(text == "ab")
    }

    @Test func executionEndsMapToTurnOutcomes() throws {
        for (type, data, status) in [("session.execution.failed", ["error": ["type": "APIError", "message": "down"]] as JSONValue, "failed"),
                                     ("session.execution.interrupted", ["reason": "user"], "cancelled")] {
            var mapper = OpenCode2Mapper()
            let events = map([try Self.frame("session.input.promoted", ["inputID": "msg_9"], seq: 1),
                              try Self.frame("session.execution.started", [:], seq: 2),
                              try Self.frame(type, data, seq: 3)], into: &mapper)
            let done = try #require(events.last { $0.type == .turnCompleted })
            #expect(done.data["status"]?.string == status)
            #expect(done.turn == "msg_9")
            if status == "failed" { #expect(done.data["error"] == "APIError: down") }
        }
    }

    @Test func anExecutionWhoseInputWasNotSeenIsStillATurn() throws {
        var mapper = OpenCode2Mapper()
        let events = map([try Self.frame("session.execution.started", [:], seq: 5),
                          try Self.frame("session.execution.succeeded", [:], seq: 6)], into: &mapper)
        #expect(events.filter { $0.type == .turnStarted }.count == 1)
        #expect(events.filter { $0.type == .turnCompleted }.count == 1)
    }

    @Test func framesOfTheWrongShapeMapToNothingAndNeverTrap() throws {
        var mapper = OpenCode2Mapper()
        let odd: [JSONValue] = [
            ["type": "session.text.delta", "data": ["sessionID": "ses_a"]],
            ["type": "session.text.delta", "data": ["sessionID": "ses_a", "ordinal": "zero", "delta": 5]],
            ["type": "session.tool.success", "data": ["sessionID": "ses_a"]],
            ["type": "permission.asked", "data": ["sessionID": "ses_a"]],
            ["type": "form.created", "data": ["sessionID": "ses_a", "form": "nope"]],
            ["type": "session.execution.succeeded", "data": [:]],
            ["type": "tui.toast.show", "data": ["sessionID": "ses_a"]],
        ]
        for frame in odd {
            let wire = try OpenCode2WireDecoder.decode(frame)
            #expect(mapper.map(wire).allSatisfy { $0.type == .sessionStatus })
        }
    }

    @Test func aFormIsAQuestionAndItsAnswerIsKeyedByField() throws {
        let form: JSONValue = [
            "id": "frm_1", "sessionID": .string(Self.session), "mode": "form", "title": "Deploy", "metadata": ["kind": "question"],
            "fields": [["key": "q0", "type": "string", "title": "Deploy target", "options": [["value": "stg", "label": "Staging"]], "custom": true],
                       ["key": "q1", "type": "multiselect", "title": "Regions", "options": [["value": "eu", "label": "EU"]]]],
        ]
        var mapper = OpenCode2Mapper()
        let events = mapper.map(try Self.frame("form.created", ["form": form]))
        let asked = try #require(events.first { $0.type == .approvalRequested })
        #expect(asked.data["kind"] == "question")
        let questions = try #require(asked.data["questions"]?.array)
        #expect(questions.map { $0["header"]?.string } == ["q0", "q1"])
        #expect(questions[0]["options"]?.array?.first?["label"] == "Staging")
        #expect(questions[1]["multiple"] == true)
        let answer = OpenCode2Mapper.formAnswer(fields: form["fields"]?.array ?? [], answers: [["staging"], ["EU", "Mars"]])
        #expect(JSONValue.object(answer) == ["q0": "stg", "q1": ["eu", "Mars"]])
        let resolved = mapper.map(try Self.frame("form.cancelled", ["id": "frm_1"]))
        #expect(resolved.first { $0.type == .approvalResolved }?.data["decision"] == "rejected")
    }

    @Test func historyOfTheMessageUnionReplaysTurns() throws {
        let messages: [JSONValue] = [
            ["id": "msg_u1", "type": "user", "text": "please run the shell", "time": ["created": 1]],
            ["id": "msg_a1", "type": "assistant", "agent": "build", "time": ["created": 2], "finish": "tool-calls",
             "content": [["type": "reasoning", "text": "hmm"], ["type": "text", "text": "Running it."],
                         ["type": "tool", "id": "call_0", "name": "shell",
                          "state": ["status": "completed", "input": ["command": "echo hi"], "content": [["type": "text", "text": "hi\n"]]]]]],
            ["id": "msg_i1", "type": "idle", "outcome": "succeeded", "time": ["created": 3]],
            ["id": "msg_u2", "type": "user", "text": "again", "time": ["created": 4]],
            ["id": "msg_i2", "type": "idle", "outcome": "interrupted", "time": ["created": 5]],
        ]
        var mapper = OpenCode2Mapper()
        let events = mapper.replay(session: Self.session, messages: messages, busy: false)
        #expect(events.filter { $0.type == .turnStarted }.compactMap(\.turn) == ["msg_u1", "msg_u2"])
        #expect(events.filter { $0.type == .turnCompleted }.map { $0.data["status"]?.string } == ["completed", "cancelled"])
        let parts = events.filter { $0.type == .partCompleted }
        #expect(parts.map { $0.data["kind"]?.string } == ["text", "reasoning", "text", "command", "text"])
        #expect(parts.first { $0.data["kind"] == "command" }?.data["command"] == "echo hi")
        #expect(parts[2].part == "msg_a1#1")
    }

    // MARK: Machine

    func machine(_ request: EventsRequest = EventsRequest(follow: true), prompt: Bool = false) -> OpenCode2StreamMachine {
        OpenCode2StreamMachine(request: request, configuration: .init(endpoint: "http://oc", promptSession: prompt ? Self.session : nil))
    }

    static func connected() throws -> OpenCode2WireEvent {
        try OpenCode2WireDecoder.decode(["id": "evt_0", "type": "server.connected", "data": [:]])
    }

    @Test func aReconnectResumesActiveSessionsAfterTheirLastSeq() throws {
        var machine = machine()
        let first = machine.receive(try Self.connected())
        #expect(first.contains { if case .noteGeneration = $0 { true } else { false } })
        #expect(!first.contains { if case .catchUp = $0 { true } else { false } })
        for frame in try Self.permissionTurn().prefix(8) { _ = machine.receive(frame) }
        let again = machine.receive(try Self.connected())
        let catchUps: [OpenCode2StreamMachine.CatchUp] = again.flatMap { action -> [OpenCode2StreamMachine.CatchUp] in
            if case .catchUp(let list) = action { list } else { [] }
        }
        #expect(catchUps == [.init(session: Self.session, after: 6)])
        #expect(!again.contains { if case .noteGeneration = $0 { true } else { false } })
        // The log's replay and the pending list: what was missed, once.
        let rest = try Self.permissionTurn().dropFirst(8).filter(\.isDurable)
        let pending: [JSONValue] = [["id": "per_1", "sessionID": .string(Self.session), "action": "shell", "resources": ["rm -rf build"]]]
        let actions = machine.caughtUp(session: Self.session, frames: Array(rest), pending: pending)
        let events: [Event] = actions.flatMap { action -> [Event] in if case .emit(let events) = action { events } else { [] } }
        #expect(events.filter { $0.type == .turnCompleted }.count == 1)
        #expect(events.filter { $0.type == .partCompleted && $0.data["kind"] == "command" }.count == 1)
        // Whatever the global stream repeats now is dropped.
        let repeated = try Self.permissionTurn().suffix(3).flatMap { machine.receive($0) }
        #expect(!repeated.contains { if case .emit(let events) = $0 { events.contains { $0.type == .turnCompleted } } else { false } })
    }

    @Test func sendFollowPostsOnceConnectedAndFollowsTheTurnTheAnswerNames() throws {
        var machine = machine(EventsRequest(session: Self.session, follow: true, untilTurnCompletes: true), prompt: true)
        let actions = machine.receive(try Self.connected())
        #expect(actions.contains { if case .postPrompt(let session) = $0 { session == Self.session } else { false } })
        machine.watermark(session: Self.session, seq: 0)
        machine.promptWasPosted(input: Self.input)
        var emitted: [Event] = []
        var finished = false
        for frame in try Self.permissionTurn() {
            for action in machine.receive(frame) {
                if case .emit(let events) = action { emitted += events }
                if case .finish = action { finished = true }
            }
        }
        #expect(finished && machine.isDone)
        #expect(emitted.first { $0.type == .turnStarted }?.turn == Self.input)
        #expect(emitted.last?.type == .turnCompleted)
        // A second connection does not post again.
        #expect(!machine.receive(try Self.connected()).contains { if case .postPrompt = $0 { true } else { false } })
    }

    /// `events --follow` that connects while a session runs shows that execution from its
    /// start (read from the log), not the turns before it, and then goes on live.
    @Test func aSessionRunningAtConnectIsJoinedFromItsCurrentExecution() throws {
        var machine = machine()
        let first = machine.receive(try Self.connected())
        #expect(first.contains { if case .joinRunning = $0 { true } else { false } })
        #expect(machine.sessionsToJoin(running: [Self.session, "ses_other"]).map(\.session) == [Self.session, "ses_other"])
        let earlier: [OpenCode2WireEvent] = [
            try Self.frame("session.input.promoted", ["inputID": "msg_old"], seq: 1),
            try Self.frame("session.execution.started", [:], seq: 2),
            try Self.frame("session.execution.succeeded", [:], seq: 3),
        ]
        let current = try Self.permissionTurn().prefix(8).map { frame -> OpenCode2WireEvent in
            var frame = frame
            frame.seq = frame.seq.map { $0 + 3 }
            return frame
        }
        let actions = machine.joined(session: Self.session, frames: earlier + current.filter(\.isDurable), pending: [])
        let events: [Event] = actions.flatMap { action -> [Event] in if case .emit(let events) = action { events } else { [] } }
        #expect(events.filter { $0.type == .turnStarted }.compactMap(\.turn) == [Self.input])
        #expect(events.first { $0.type == .partCompleted && $0.data["role"] == "user" }?.data["text"] == "clean the build")
        #expect(!events.contains { $0.turn == "msg_old" })
        // Then live: the rest of the execution ends the joined turn.
        let rest = try Self.permissionTurn().dropFirst(8).map { frame -> OpenCode2WireEvent in
            var frame = frame
            frame.seq = frame.seq.map { $0 + 3 }
            return frame
        }
        let live: [Event] = rest.flatMap { machine.receive($0) }.flatMap { action -> [Event] in if case .emit(let events) = action { events } else { [] } }
        #expect(live.last { $0.type == .turnCompleted }?.turn == Self.input)
        // With --session, only that one is joined; send --follow joins none.
        var one = OpenCode2StreamMachine(request: EventsRequest(session: Self.session, follow: true), configuration: .init(endpoint: "x"))
        #expect(one.sessionsToJoin(running: ["ses_other"]).isEmpty)
        var send = self.machine(EventsRequest(session: Self.session, follow: true, untilTurnCompletes: true), prompt: true)
        #expect(!send.receive(try Self.connected()).contains { if case .joinRunning = $0 { true } else { false } })
    }

    @Test func aPromptWhoseAnswerWasLostIsFoundInTheLog() throws {
        let frames = [try Self.frame("session.input.admitted", ["inputID": "msg_x", "input": ["type": "user", "text": "hi"]], seq: 4)]
        #expect(OpenCode2StreamMachine.admittedInput(frames, text: "hi") == "msg_x")
        #expect(OpenCode2StreamMachine.admittedInput(frames, text: "other") == nil)
    }
}
