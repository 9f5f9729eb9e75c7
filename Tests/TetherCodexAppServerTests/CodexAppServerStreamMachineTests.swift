import Testing
import TetherCodexProtocol
import TetherCore
@testable import TetherCodexAppServer
import TetherStreaming

/// The stream's rules, replayed from what the real codex 0.163 sent (Transcripts/).
@Suite("codex stream machine, from recorded transcripts")
struct CodexAppServerStreamMachineTests {
    @Test("a plain turn: started, the reply streamed and completed whole, completed once")
    func plainTurn() throws {
        let transcript = try Transcript("plain_turn_and_threads_stdio")
        var machine = CodexAppServerStreamMachine.following()
        let events = machine.feed(transcript.unasked(by: "A"))
        let started = events.of(.turnStarted)
        #expect(started.count == 1)
        #expect(events.of(.turnCompleted).count == 1)
        #expect(events.of(.turnCompleted).first?.data["status"] == "completed")
        let reply = try #require(events.of(.partCompleted).first { $0.data["role"] == "assistant" })
        let text = try #require(reply.data["text"]?.string)
        #expect(text.hasPrefix("Fake model reply. You said: hello there"))
        // The transcript elides some deltas (its long runs are cut): what streamed begins the text.
        let streamed = events.of(.partDelta).filter { $0.part == reply.part }.compactMap { $0.data["delta"]?.string }.joined()
        #expect(!streamed.isEmpty && text.hasPrefix(streamed))
        // Each part completes once.
        let completed = events.of(.partCompleted).compactMap(\.part)
        #expect(Set(completed).count == completed.count)
    }

    @Test("deltas and items started read straight from their bytes mean what the messages parsed whole mean, --raw too",
          arguments: [false, true])
    func readStraightOrWhole(raw: Bool) throws {
        var read = 0, hot = 0
        for name in ["plain_turn_and_threads_stdio", "approval_turns_stdio", "reconnect_filechange_ws", "two_clients_ws"] {
            let messages = try Transcript(name).unasked(by: "A")
            func machine() -> CodexAppServerStreamMachine {
                CodexAppServerStreamMachine(request: EventsRequest(follow: true, raw: raw),
                                            configuration: .init(target: nil, endpoint: "ws://test", hasPrompt: false, newProcessPerConnection: false))
            }
            var whole = machine(), straight = machine()
            for message in messages {
                let wire = CodexAppServerStreamMachine.wire(message)
                if case .hot = wire { read += 1 }
                if let method = message["method"]?.string, message["id"] == nil,
                   method == "item/started" || CodexItemDelta.target(ofMethod: method) != nil { hot += 1 }
                #expect(straight.receive(wire, at: 1) == whole.receive(CodexAppServerMessage.whole(message), at: 1), "\(message.serialized)")
            }
        }
        #expect(read == hot && read > 0)  // every delta and item started took the straight path
    }

    @Test("every decision of a command approval: one request, one resolution, the turn's outcome as observed")
    func commandDecisions() throws {
        let transcript = try Transcript("approval_turns_stdio")
        let expected: [String: String] = ["accept": "completed", "decline": "completed", "cancel": "cancelled"]
        var checked = 0
        for section in transcript.sections {
            guard let decision = expected.first(where: { section == "decision \($0.key)" }) else { continue }
            var machine = CodexAppServerStreamMachine.following()
            let events = machine.feed(transcript.unasked(by: "A", section: section))
            let requested = events.of(.approvalRequested)
            #expect(requested.count == 1, "\(section)")
            let id = try #require(requested.first?.data["id"]?.string)
            // THREAD~REQUEST~KIND~TURN~ITEM: answerable from a fresh process, unique across restarts.
            #expect(id.split(separator: "~").count == 5, "\(id)")
            #expect(events.of(.approvalResolved).map { $0.data["id"]?.string } == [id], "\(section)")
            #expect(events.of(.turnCompleted).map { $0.data["status"]?.string } == [decision.value], "\(section)")
            if decision.key == "decline" || decision.key == "cancel" {
                let command = events.of(.partCompleted).first { $0.data["kind"] == "command" }
                #expect(command?.data["status"] == "declined", "\(section)")
            }
            checked += 1
        }
        #expect(checked == expected.count)
    }

    @Test("a pending approval across a reconnect: re-sent on resume, said once, answered, the turn finished once")
    func pendingApprovalAcrossReconnect() throws {
        let transcript = try Transcript("reconnect_pending_approval_ws")
        var machine = CodexAppServerStreamMachine.following()
        var events = machine.feed(transcript.unasked(by: "A"))
        #expect(events.of(.approvalRequested).count == 1)
        // A's connection drops; B's is the next one: resync with the resumed thread, then what came.
        let actions = machine.connected(at: 0)
        #expect(actions.contains(.resync))
        // The transcript cuts the resume answer; as the note describes it: the running turn with
        // the prompt under a synthetic id, without the command waiting for approval.
        let thread = Self.resumed(transcript.unasked(by: "A"), prompt: "run the cmd please")
        events += CodexAppServerStreamMachine.events(machine.resynced([thread], at: 0))
        events += machine.feed(transcript.unasked(by: "B"))
        #expect(events.of(.approvalRequested).count == 1)
        #expect(events.of(.partCompleted).filter { $0.data["role"] == "user" }.count == 1)
        #expect(events.of(.approvalResolved).count == 1)
        #expect(events.of(.turnCompleted).count == 1)
        #expect(events.of(.partCompleted).filter { $0.part == "call_c273d89e" }.count == 1)
        let completed = events.of(.partCompleted).compactMap(\.part)
        #expect(Set(completed).count == completed.count)
    }

    @Test("a reply cut mid-stream: the rest of the deltas continue it, item/completed gives the whole text, once")
    func midStreamReconnect() throws {
        let transcript = try Transcript("reconnect_midstream_ws")
        var machine = CodexAppServerStreamMachine.following()
        var events = machine.feed(transcript.unasked(by: "A"))
        _ = machine.connected(at: 0)
        let thread = Self.resumed(transcript.unasked(by: "A"), prompt: "slow reply please")
        events += CodexAppServerStreamMachine.events(machine.resynced([thread], at: 0))
        events += machine.feed(transcript.unasked(by: "B"))
        let reply = try #require(events.of(.partCompleted).first { $0.data["role"] == "assistant" })
        #expect(reply.data["text"]?.string?.hasPrefix("Fake model reply. You said: slow reply plea") == true)
        for part in Set(events.of(.partCompleted).compactMap(\.part)) {
            #expect(events.of(.partCompleted).filter { $0.part == part }.count == 1, "\(part)")
            #expect(events.of(.partStarted).filter { $0.part == part }.count <= 1, "\(part)")
        }
        let turns = events.of(.turnCompleted).compactMap(\.turn)
        #expect(Set(turns).count == turns.count)
        #expect(!turns.isEmpty)
    }

    @Test("a request sent again (every resume, every subscriber) is one approval")
    func duplicateRequests() throws {
        let transcript = try Transcript("approval_turns_stdio")
        var machine = CodexAppServerStreamMachine.following()
        let messages = transcript.unasked(by: "A", section: "decision accept")
        let request = try #require(messages.first { $0["id"] != nil })
        let upTo = messages.prefix { $0["id"] == nil }
        var events = machine.feed(Array(upTo) + [request, request])
        _ = machine.connected(at: 0)
        events += machine.feed([request])
        #expect(events.of(.approvalRequested).count == 1)
    }

    /// A thread as `thread/resume` returns it while its turn runs: what the client saw of that
    /// turn's start (its ids), the prompt under the synthetic id `item-1` (protocol note, §3).
    static func resumed(_ seen: [JSONValue], prompt: String) -> JSONValue {
        let started = seen.first { $0["method"]?.string == "turn/started" }
        let thread = started?["params"]?["threadId"] ?? "thr"
        let turn = started?["params"]?["turn"]?["id"] ?? "turn"
        return ["id": thread, "status": ["type": "active", "activeFlags": ["waitingOnApproval"]], "turns": [[
            "id": turn, "status": "inProgress", "itemsView": "full",
            "items": [["type": "userMessage", "id": "item-1", "clientId": .null, "content": [["type": "text", "text": .string(prompt)]]]],
        ]]]
    }

    @Test("a new stdio child: what the old one asked can no longer be answered")
    func newProcessResolvesPending() throws {
        let transcript = try Transcript("approval_turns_stdio")
        var machine = CodexAppServerStreamMachine.following(newProcessPerConnection: true)
        _ = machine.connected(at: 0)
        let upToRequest = transcript.unasked(by: "A", section: "decision accept").prefix { $0["id"] == nil } + [
            transcript.unasked(by: "A", section: "decision accept").first { $0["id"] != nil }!,
        ]
        let before = machine.feed(Array(upToRequest))
        let id = try #require(before.of(.approvalRequested).first?.data["id"]?.string)
        let after = CodexAppServerStreamMachine.events(machine.connected(at: 1))
        #expect(after.of(.approvalResolved).map { $0.data["id"]?.string } == [id])
        #expect(after.of(.approvalResolved).first?.data["decision"] == "unknown")
    }

    @Test("send --follow: the prompt goes out once resynced, and again only if it never reached the server")
    func promptSentOnce() throws {
        var machine = CodexAppServerStreamMachine.following(session: "thr", hasPrompt: true)
        #expect(machine.connected(at: 0) .contains(.resync))
        let idle: JSONValue = ["id": "thr", "status": ["type": "idle"], "turns": []]
        #expect(machine.resynced([idle], at: 0).contains(.postPrompt))
        machine.postingPrompt()
        // The link dropped before the answer; the thread shows no new turn and is idle: again.
        _ = machine.connected(at: 1)
        #expect(machine.resynced([idle], at: 1).contains(.postPrompt))
        machine.postingPrompt()
        // This time the turn exists: it is ours, and nothing is sent again.
        _ = machine.connected(at: 2)
        let running: JSONValue = ["id": "thr", "status": ["type": "active", "activeFlags": []],
                                  "turns": [["id": "t1", "status": "inProgress", "items": []]]]
        let actions = machine.resynced([running], at: 2)
        #expect(!actions.contains(.postPrompt))
        #expect(CodexAppServerStreamMachine.events(actions).of(.turnStarted).map(\.turn) == ["t1"])
        let done = machine.feed([["method": "turn/completed", "params": ["threadId": "thr", "turn": ["id": "t1", "status": "completed", "items": []]]]])
        #expect(done.of(.turnCompleted).count == 1)
        #expect(machine.isDone)
    }

    @Test("a thread without a turn yet cannot be resumed: the prompt goes out, then it is resumed")
    func threadWithoutRollout() {
        var machine = CodexAppServerStreamMachine.following(session: "thr", hasPrompt: true)
        _ = machine.connected(at: 0)
        #expect(machine.resynced([], targetHasNoRollout: true, at: 0).contains(.postPrompt))
        machine.postingPrompt()
        let actions = machine.promptSent(turn: "t1", at: 1)
        #expect(actions.contains(.resync))
        #expect(CodexAppServerStreamMachine.events(actions).of(.turnStarted).map(\.turn) == ["t1"])
        // The resync after it reads the turn the subscription missed the start of.
        let running: JSONValue = ["id": "thr", "status": ["type": "active", "activeFlags": []],
                                  "turns": [["id": "t1", "status": "completed", "items": [
                                      ["type": "agentMessage", "id": "m1", "text": "done"]]]]]
        let events = CodexAppServerStreamMachine.events(machine.resynced([running], at: 2))
        #expect(events.of(.partCompleted).map(\.part) == ["m1"])
        #expect(events.of(.turnCompleted).count == 1)
        #expect(machine.isDone)
    }

    @Test("a thread another client makes active is resumed, once, so its turn reaches this connection")
    func activeThreadsAreSubscribed() {
        var machine = CodexAppServerStreamMachine.following()
        _ = machine.connected(at: 0)
        _ = machine.resynced([["id": "known", "status": ["type": "idle"], "turns": []]], at: 0)
        let active: JSONValue = ["method": "thread/status/changed", "params": ["threadId": "other", "status": ["type": "active", "activeFlags": []]]]
        #expect(machine.receive(active, at: 1).contains(.resume(["other"])))
        #expect(!machine.receive(active, at: 2).contains(.resume(["other"])))
        let known: JSONValue = ["method": "thread/status/changed", "params": ["threadId": "known", "status": ["type": "active", "activeFlags": []]]]
        #expect(!machine.receive(known, at: 3).contains(.resume(["known"])))
        machine.resumeFailed("other")
        #expect(machine.receive(active, at: 4).contains(.resume(["other"])))
        // With --session, only that thread.
        var one = CodexAppServerStreamMachine.following(session: "known")
        _ = one.connected(at: 0)
        #expect(!one.receive(active, at: 1).contains(.resume(["other"])))
    }

    @Test("messages dropped for a slow consumer: said, and the threads re-read")
    func lostMessagesResync() {
        var machine = CodexAppServerStreamMachine.following()
        #expect(machine.lost(count: 3) == [.noteDropped(3), .resync])
    }
}
