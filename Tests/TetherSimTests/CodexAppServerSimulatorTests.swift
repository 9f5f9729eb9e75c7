import Foundation
import Testing
@testable import TetherSim

/// `tether simulate codex` over WebSocket, checked against the wire of the real codex 0.163
/// (`protocols/codex-app-server.md` and its transcripts).
@Suite("Codex app-server simulator: session, turns, approvals")
struct CodexAppServerSimulatorTests {
    @Test("initialize first, once; missing params, unknown methods and garbage as codex answers them")
    func initializeRules() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try peer.sendText(#"{"id":7,"method":"thread/list","params":{}}"#)
            _ = try await peer.response(7)
            #expect(peer.inbox.received.last == #"{"error":{"code":-32600,"message":"Not initialized"},"id":7}"#)
            try await peer.initialize("clientA")
            let again = try await peer.call(2, "initialize", ["clientInfo": ["name": "x", "version": "1"]])
            #expect(string(again, "error", "message") == "Already initialized")
            try peer.sendText(#"{"id":3,"method":"thread/loaded/list"}"#)
            _ = try await peer.response(3)
            #expect(peer.inbox.received.last == #"{"error":{"code":-32600,"message":"Invalid request: missing field `params`"},"id":3}"#)
            let unknown = try await peer.call(4, "no/such/method", [:])
            #expect(member(unknown, "error", "code") as? Int == -32600)
            #expect(string(unknown, "error", "message")?.hasPrefix("Invalid request: unknown variant `no/such/method`, expected one of `initialize`") == true)
            // Garbage, two objects in one frame and a binary frame: dropped without a word.
            try peer.sendText("garbage")
            try peer.sendText(#"{"id":5,"method":"thread/list","params":{}}{"id":6}"#)
            try peer.sendBinary(Array(#"{"id":8,"method":"thread/list","params":{}}"#.utf8))
            try peer.sendText(#"{"jsonrpc":"2.0","id":"abc-1","method":"thread/loaded/list","params":{}}"#)
            let reply = try await peer.inbox.next("the abc-1 reply") { _ in true }
            #expect(reply["id"] as? String == "abc-1")
            #expect(member(reply, "result", "data") as? [String] == [])
            // No `jsonrpc` anywhere; `emittedAtMs` on notifications only.
            for text in peer.inbox.received {
                #expect(!text.contains("jsonrpc"))
                let message = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                let isNotification = message["method"] != nil && message["id"] == nil
                #expect((message["emittedAtMs"] != nil) == isNotification, "\(text)")
            }
        }
    }

    @Test("a plain turn: the notification sequence of plain_turn_and_threads_stdio.txt, then the history")
    func plainTurn() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let reply = try await peer.call(2, "thread/start", ["cwd": "/srv/project", "approvalPolicy": "on-request", "sandbox": "workspace-write"])
            let thread = try #require(string(reply, "result", "thread", "id"))
            #expect(string(reply, "result", "sandbox", "type") == "workspaceWrite")
            #expect(string(reply, "result", "approvalPolicy") == "on-request")
            let started = try await peer.notification("thread/started")
            #expect(string(started, "params", "thread", "id") == thread)
            #expect(string(started, "params", "thread", "status", "type") == "idle")
            let turn = try await peer.startTurn(3, thread: thread, "hello there", extra: ["clientUserMessageId": "client-msg-0001"])
            let messages = try await peer.untilTurnCompleted()
            #expect(shape(messages) == [
                "thread/status/changed active[]", "turn/started", "item/started userMessage", "item/completed userMessage",
                "item/started agentMessage", "delta×", "item/completed agentMessage", "thread/tokenUsage/updated",
                "account/rateLimits/updated", "thread/status/changed idle", "turn/completed",
            ])
            let deltas = messages.filter { methodOf($0) == "item/agentMessage/delta" }.compactMap { string($0, "params", "delta") }
            #expect(deltas.first == "Fake model r")
            #expect(deltas.joined() == "Fake model reply. You said: hello there")
            let user = try #require(messages.first { string($0, "params", "item", "type") == "userMessage" })
            #expect(string(user, "params", "item", "clientId") == "client-msg-0001")
            #expect(member(user, "params", "startedAtMs") is Int)
            let completed = try #require(messages.last)
            #expect(string(completed, "params", "turn", "id") == turn)
            #expect(string(completed, "params", "turn", "status") == "completed")
            #expect(string(completed, "params", "turn", "itemsView") == "summary")
            let summary = member(completed, "params", "turn", "items") as? [[String: Any]]
            #expect(summary?.count == 1)
            #expect(summary?.first?["text"] as? String == "Fake model reply. You said: hello there")
            let usage = try #require(messages.first { methodOf($0) == "thread/tokenUsage/updated" })
            #expect(member(usage, "params", "tokenUsage", "total", "totalTokens") as? Int == 15)
            #expect(member(usage, "params", "tokenUsage", "modelContextWindow") as? Int == 258_400)

            let list = try await peer.call(4, "thread/list", [:])
            let listed = try #require((member(list, "result", "data") as? [[String: Any]])?.first)
            #expect(listed["preview"] as? String == "hello there")
            #expect(string(listed, "status", "type") == "idle")
            #expect(member(try await peer.call(5, "thread/loaded/list", [:]), "result", "data") as? [String] == [thread])
            let turns = try await peer.call(6, "thread/turns/list", ["threadId": thread])
            let history = try #require((member(turns, "result", "data") as? [[String: Any]])?.first)
            #expect((history["items"] as? [[String: Any]])?.compactMap { $0["type"] as? String } == ["userMessage", "agentMessage"])
            #expect(history["status"] as? String == "completed")
            let items = try await peer.call(7, "thread/items/list", ["threadId": thread])
            let first = try #require((member(items, "result", "data") as? [[String: Any]])?.first)
            #expect(string(first, "item", "clientId") == "client-msg-0001")
            #expect(first["turnId"] as? String == turn)
            let unknown = try await peer.call(8, "thread/read", ["threadId": "01a24d2c-66b3-7860-9cfe-d3af1d3236be"])
            #expect(string(unknown, "error", "message") == "thread not loaded: 01a24d2c-66b3-7860-9cfe-d3af1d3236be")
        }
    }

    @Test("command approval: the request as observed, and each decision's effect", arguments: [
        "accept", "acceptForSession", "amendment", "decline", "cancel", "yes-please",
    ])
    func commandApproval(_ decision: String) async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            _ = try await peer.startTurn(3, thread: thread, "please run cmd now")
            let request = try await peer.serverRequest("item/commandExecution/requestApproval")
            #expect(request["id"] as? Int == 0)
            #expect(request["emittedAtMs"] == nil)
            let params = try #require(request["params"] as? [String: Any])
            #expect(params["kind"] as? String == "command")
            #expect(params["command"] as? String == "/bin/bash -lc 'touch created_by_codex.txt && echo done'")
            #expect(params["proposedExecpolicyAmendment"] as? [String] == ["touch", "created_by_codex.txt"])
            let available = try #require(params["availableDecisions"] as? [Any])
            #expect(available.count == 3)
            #expect(available.first as? String == "accept")
            #expect(available.last as? String == "cancel")
            #expect(member(available[1], "acceptWithExecpolicyAmendment", "execpolicy_amendment") as? [String] == ["touch", "created_by_codex.txt"])
            let answer: Any = decision == "amendment"
                ? ["acceptWithExecpolicyAmendment": ["execpolicy_amendment": ["touch", "created_by_codex.txt"]]]
                : decision
            try peer.answer(0, ["decision": answer])
            let messages = try await peer.untilTurnCompleted()
            let shapes = shape(messages)
            #expect(shapes.first == "thread/status/changed active[]")
            #expect(shapes.contains("thread/status/changed active[waitingOnApproval]"))
            #expect(shapes.contains("serverRequest/resolved"))
            let item = messages.last { string($0, "params", "item", "type") == "commandExecution" && methodOf($0) == "item/completed" }
            let turn = try #require(messages.last)
            switch decision {
            case "decline":
                #expect(string(item, "params", "item", "status") == "declined")
                #expect(string(turn, "params", "turn", "status") == "completed")
                let text = (member(turn, "params", "turn", "items") as? [[String: Any]])?.first?["text"] as? String
                #expect(text?.contains("rejected by user") == true)
            case "yes-please":
                // A malformed answer: no JSON-RPC error, the item failed, the turn goes on (note §5).
                #expect(string(item, "params", "item", "status") == "failed")
                #expect(string(turn, "params", "turn", "status") == "completed")
                #expect(!messages.contains { methodOf($0) == "error" })
            case "cancel":
                #expect(string(item, "params", "item", "status") == "declined")
                #expect(string(turn, "params", "turn", "status") == "interrupted")
                #expect((member(turn, "params", "turn", "items") as? [Any])?.isEmpty == true)
            default:
                #expect(string(item, "params", "item", "status") == "completed")
                #expect(string(item, "params", "item", "aggregatedOutput") == "done\n")
                #expect(string(turn, "params", "turn", "status") == "completed")
            }
            // A later cmd turn on the same thread: asked again, except after acceptForSession;
            // after an amendment the proposal moves on to `echo done`.
            _ = try await peer.startTurn(4, thread: thread, "cmd again")
            let again = try await peer.inbox.next("an approval or the end of the turn") {
                ["request item/commandExecution/requestApproval", "turn/completed"].contains(methodOf($0))
            }
            if decision == "acceptForSession" {
                #expect(methodOf(again) == "turn/completed")
                #expect(string(again, "params", "turn", "status") == "completed")
            } else {
                #expect(again["id"] as? Int == 1)
                #expect(member(again, "params", "proposedExecpolicyAmendment") as? [String]
                    == (decision == "amendment" ? ["echo", "done"] : ["touch", "created_by_codex.txt"]))
            }
        }
    }

    @Test("file change: the diff in item/started only, the request without it, turn/diff/updated after accept", arguments: [
        "accept", "decline", "cancel",
    ])
    func fileChangeApproval(_ decision: String) async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2, ["cwd": "/srv/project", "sandbox": "read-only"])
            _ = try await peer.startTurn(3, thread: thread, "apply the patch")
            let request = try await peer.serverRequest("item/fileChange/requestApproval")
            let params = try #require(request["params"] as? [String: Any])
            #expect(Set(params.keys) == ["threadId", "turnId", "itemId", "startedAtMs", "reason", "grantRoot"])
            try peer.answer(request["id"] as? Int ?? -1, ["decision": decision])
            let messages = try await peer.untilTurnCompleted()
            let started = try #require(messages.first { methodOf($0) == "item/started" && string($0, "params", "item", "type") == "fileChange" })
            let change = try #require((member(started, "params", "item", "changes") as? [[String: Any]])?.first)
            #expect(change["path"] as? String == "/srv/project/patched_by_codex.txt")
            #expect(string(change, "kind", "type") == "add")
            #expect(change["diff"] as? String == "hello from apply_patch\n")
            #expect(string(started, "params", "item", "id") == params["itemId"] as? String)
            let completion = messages.first { methodOf($0) == "item/completed" && string($0, "params", "item", "type") == "fileChange" }
            let diffs = messages.filter { methodOf($0) == "turn/diff/updated" }
            let status = string(messages.last, "params", "turn", "status")
            switch decision {
            case "accept":
                #expect(string(completion, "params", "item", "status") == "completed")
                #expect(diffs.count == 3)
                #expect(string(diffs.first, "params", "diff")?.hasPrefix("diff --git a/patched_by_codex.txt b/patched_by_codex.txt\nnew file mode 100644\n") == true)
                #expect(status == "completed")
            case "decline":
                #expect(string(completion, "params", "item", "status") == "declined")
                #expect(diffs.isEmpty)
                #expect(status == "completed")
            default:
                #expect(completion == nil)
                #expect(diffs.isEmpty)
                #expect(status == "interrupted")
            }
        }
    }

    @Test("approvalPolicy never: the command runs without asking")
    func neverAsk() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2, ["approvalPolicy": "never", "sandbox": "danger-full-access"])
            _ = try await peer.startTurn(3, thread: thread, "run the cmd please")
            let messages = try await peer.untilTurnCompleted()
            #expect(!messages.contains { methodOf($0).hasPrefix("request ") })
            #expect(shape(messages).contains("item/completed commandExecution"))
            #expect(string(messages.last, "params", "turn", "status") == "completed")
        }
    }

    @Test("the link cut mid-stream: the resumer gets the rest of the deltas with no item/started, then the whole text")
    func midStreamReconnect() async throws {
        var options = CodexAppServerSimulator.Options(pacing: .milliseconds(1))
        options.slowPacing = .milliseconds(150)
        try await withCodexAppServer(options) { sim, port in
            let first = try await AppServerWSPeer.connect(port: port)
            try await first.initialize("clientA")
            let thread = try await first.startThread(2)
            _ = try await first.startTurn(3, thread: thread, "slow reply please, this prompt is long so the reply has many chunks")
            _ = try await first.notification("item/agentMessage/delta")
            first.cut()
            try await waitUntil { sim.openConnections == 0 }
            let second = try await AppServerWSPeer.connect(port: port)
            try await second.initialize("clientB")
            let resumed = try await second.call(2, "thread/resume", ["threadId": thread])
            #expect(member(resumed, "result", "thread", "status", "type") as? String == "active")
            let snapshot = (member(resumed, "result", "thread", "turns") as? [[String: Any]])?.first
            #expect((snapshot?["items"] as? [[String: Any]])?.compactMap { $0["type"] as? String } == ["userMessage"])
            let rest = try await second.untilTurnCompleted()
            #expect(!rest.contains { methodOf($0) == "item/started" })
            var deltas: [String] = []
            for message in rest where methodOf(message) == "item/agentMessage/delta" {
                if let delta = string(message, "params", "delta") { deltas.append(delta) }
            }
            #expect(deltas.count >= 1, "\(rest.count) \(rest.map(methodOf))")
            #expect(deltas.first != "Fake model r")
            let completed = rest.first { methodOf($0) == "item/completed" }
            #expect(string(completed, "params", "item", "text") == "Fake model reply. You said: slow reply please, this prompt is long so the reply has many chunks")
        }
    }

    @Test("a resume snapshot carries a pending fileChange with its diff")
    func resumeSnapshotFileChange() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            _ = try await peer.startTurn(3, thread: thread, "patch it")
            let request = try await peer.serverRequest("item/fileChange/requestApproval")
            let resumed = try await peer.call(4, "thread/resume", ["threadId": thread])
            let items = ((member(resumed, "result", "thread", "turns") as? [[String: Any]])?.first?["items"] as? [[String: Any]]) ?? []
            #expect(items.compactMap { $0["type"] as? String } == ["userMessage", "fileChange"])
            #expect(items.last?["id"] as? String == string(request, "params", "itemId"))
            #expect((items.last?["changes"] as? [[String: Any]])?.first?["diff"] as? String == "hello from apply_patch\n")
            // Resuming again while subscribed: the request comes again (a duplicate), same id.
            let again = try await peer.serverRequest("item/fileChange/requestApproval")
            #expect(again["id"] as? Int == request["id"] as? Int)
            let list = try await peer.call(5, "thread/items/list", ["threadId": thread])
            #expect((member(list, "result", "data") as? [[String: Any]])?.compactMap { string($0, "item", "type") } == ["userMessage"])
        }
    }

    @Test("a pending approval outlives its client: a second connection's thread/resume gets it again, same id")
    func resumeResendsPendingApproval() async throws {
        try await withCodexAppServer { sim, port in
            let first = try await AppServerWSPeer.connect(port: port)
            try await first.initialize("clientA")
            let thread = try await first.startThread(2)
            let turn = try await first.startTurn(3, thread: thread, "run the cmd please")
            let original = try await first.serverRequest("item/commandExecution/requestApproval")
            first.cut()
            try await waitUntil { sim.openConnections == 0 }

            let second = try await AppServerWSPeer.connect(port: port)
            try await second.initialize("clientB")
            #expect(member(try await second.call(2, "thread/loaded/list", [:]), "result", "data") as? [String] == [thread])
            let read = try await second.call(3, "thread/read", ["threadId": thread])
            #expect(member(read, "result", "thread", "status", "activeFlags") as? [String] == ["waitingOnApproval"])
            let turns = try await second.call(4, "thread/turns/list", ["threadId": thread, "itemsView": "full"])
            let running = try #require((member(turns, "result", "data") as? [[String: Any]])?.first)
            #expect(running["status"] as? String == "inProgress")
            #expect((running["items"] as? [[String: Any]])?.compactMap { $0["type"] as? String } == ["userMessage"])

            try second.send(["id": 5, "method": "thread/resume", "params": ["threadId": thread]])
            let resumed = try await second.inbox.collect(until: "the re-sent request") { ($0["method"] as? String) == "item/commandExecution/requestApproval" }
            #expect(shape(resumed) == [
                "deprecationNotice", "response", "thread/goal/cleared", "request item/commandExecution/requestApproval",
            ])
            let response = resumed[1]
            #expect(member(response, "result", "thread", "status", "activeFlags") as? [String] == ["waitingOnApproval"])
            let snapshot = try #require((member(response, "result", "thread", "turns") as? [[String: Any]])?.first)
            #expect(snapshot["id"] as? String == turn)
            #expect((snapshot["items"] as? [[String: Any]])?.map { $0["id"] as? String } == ["item-1"])
            let again = try #require(resumed.last)
            #expect(again["id"] as? Int == original["id"] as? Int)
            #expect(NSDictionary(dictionary: again["params"] as? [String: Any] ?? [:]) == NSDictionary(dictionary: original["params"] as? [String: Any] ?? [:]))

            try second.answer(0, ["decision": "accept"])
            let rest = try await second.untilTurnCompleted()
            #expect(shape(rest).prefix(3) == ["serverRequest/resolved", "thread/status/changed active[]", "item/completed commandExecution"])
            #expect(string(rest.last, "params", "turn", "status") == "completed")
        }
    }

    @Test("two subscribers get the same request; the first answer wins, both see serverRequest/resolved, a late answer is ignored")
    func firstAnswerWins() async throws {
        try await withCodexAppServer { _, port in
            let a = try await AppServerWSPeer.connect(port: port)
            try await a.initialize("clientA")
            let b = try await AppServerWSPeer.connect(port: port)
            try await b.initialize("clientB")
            let thread = try await a.startThread(2)
            // thread/started and thread/status/changed reach B unsubscribed; the turn itself does not.
            _ = try await b.notification("thread/started")
            let early = try await b.call(2, "thread/resume", ["threadId": thread, "excludeTurns": true])
            #expect(string(early, "error", "message") == "no rollout found for thread id \(thread)")
            _ = try await a.startTurn(3, thread: thread, "hello A")
            _ = try await a.untilTurnCompleted()
            try await b.inbox.collect(until: "idle") { string($0, "params", "status", "type") == "idle" }.forEach {
                #expect(methodOf($0) == "thread/status/changed")
            }
            _ = try await b.call(3, "thread/resume", ["threadId": thread, "excludeTurns": true])
            _ = b.inbox.takeAll()
            _ = a.inbox.takeAll()

            _ = try await a.startTurn(4, thread: thread, "do the cmd")
            let toA = try await a.serverRequest("item/commandExecution/requestApproval")
            let toB = try await b.serverRequest("item/commandExecution/requestApproval")
            #expect(toA["id"] as? Int == toB["id"] as? Int)
            let id = try #require(toB["id"] as? Int)
            try b.answer(id, ["decision": "decline"])
            for peer in [a, b] as [any AppServerPeer] {
                let resolved = try await peer.notification("serverRequest/resolved")
                #expect(member(resolved, "params", "requestId") as? Int == id)
            }
            try a.answer(id, ["decision": "accept"])
            let rest = try await a.untilTurnCompleted()
            let item = rest.first { methodOf($0) == "item/completed" && string($0, "params", "item", "type") == "commandExecution" }
            #expect(string(item, "params", "item", "status") == "declined")
            #expect(!rest.contains { methodOf($0) == "error" || methodOf($0) == "serverRequest/resolved" })
            _ = try await b.untilTurnCompleted()

            // After thread/unsubscribe, B sees the thread's status changes and nothing else.
            #expect(string(try await b.call(5, "thread/unsubscribe", ["threadId": thread]), "result", "status") == "unsubscribed")
            #expect(string(try await b.call(6, "thread/unsubscribe", ["threadId": thread]), "result", "status") == "notSubscribed")
            _ = try await a.startTurn(5, thread: thread, "only A now")
            _ = try await a.untilTurnCompleted()
            let seen = try await b.inbox.collect(until: "idle") { string($0, "params", "status", "type") == "idle" }
            #expect(shape(seen) == ["thread/status/changed active[]", "thread/status/changed idle"])
        }
    }

    @Test("turn/start on a busy thread steers: same turn id, the partial reply dropped, a second userMessage")
    func steer() async throws {
        try await withCodexAppServer(.init(pacing: .milliseconds(20))) { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            let turn = try await peer.startTurn(3, thread: thread, "a long prompt so that the reply has many chunks to stream, and then some more words to make it longer still")
            _ = try await peer.notification("item/agentMessage/delta")
            let steered = try await peer.startTurn(4, thread: thread, "extra input while busy", extra: ["clientUserMessageId": "m-2"])
            #expect(steered == turn)
            let wrong = try await peer.call(5, "turn/steer", [
                "threadId": thread, "expectedTurnId": "wrong", "input": [["type": "text", "text": "x"]],
            ])
            #expect(string(wrong, "error", "message") == "expected active turn id `wrong` but found `\(turn)`")
            let messages = try await peer.untilTurnCompleted()
            let agentStarts = messages.filter { methodOf($0) == "item/started" && string($0, "params", "item", "type") == "agentMessage" }
            let agentEnds = messages.filter { methodOf($0) == "item/completed" && string($0, "params", "item", "type") == "agentMessage" }
            #expect(agentStarts.count == 2)  // the dropped reply and the answer to the steer
            #expect(agentEnds.count == 1)
            #expect(string(agentEnds.first, "params", "item", "text") == "Fake model reply. You said: extra input while busy")
            let user = messages.last { methodOf($0) == "item/started" && string($0, "params", "item", "type") == "userMessage" }
            #expect(string(user, "params", "item", "clientId") == "m-2")
            #expect(string(messages.last, "params", "turn", "id") == turn)
            let history = try await peer.call(6, "thread/turns/list", ["threadId": thread, "itemsView": "full"])
            let items = ((member(history, "result", "data") as? [[String: Any]])?.first?["items"] as? [[String: Any]]) ?? []
            #expect(items.compactMap { $0["type"] as? String } == ["userMessage", "userMessage", "agentMessage"])
            let idle = try await peer.call(7, "turn/steer", ["threadId": thread, "expectedTurnId": turn, "input": [["type": "text", "text": "x"]]])
            #expect(string(idle, "error", "message") == "no active turn to steer")
        }
    }

    @Test("turn/steer while an approval waits: the input joins the turn's next model call")
    func steerWhileWaiting() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            let turn = try await peer.startTurn(3, thread: thread, "cmd")
            let request = try await peer.serverRequest("item/commandExecution/requestApproval")
            let steered = try await peer.call(4, "turn/steer", [
                "threadId": thread, "expectedTurnId": turn, "input": [["type": "text", "text": "and then stop"]],
            ])
            #expect(string(steered, "result", "turnId") == turn)
            try peer.answer(request["id"] as? Int ?? -1, ["decision": "accept"])
            let messages = try await peer.untilTurnCompleted()
            let users = messages.filter { methodOf($0) == "item/completed" && string($0, "params", "item", "type") == "userMessage" }
            #expect(users.count == 2)  // the prompt's (before the request) and the steer's
            #expect(string((member(users.last, "params", "item", "content") as? [Any])?.first, "text") == "and then stop")
            let text = (member(messages.last, "params", "turn", "items") as? [[String: Any]])?.first?["text"] as? String
            #expect(text == "Fake model reply. You said: and then stop")
            #expect(string(messages.last, "params", "turn", "status") == "completed")
        }
    }

    @Test("turn/interrupt while an approval waits: turn/completed interrupted, then serverRequest/resolved")
    func interrupt() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            let turn = try await peer.startTurn(3, thread: thread, "cmd again")
            let request = try await peer.serverRequest("item/commandExecution/requestApproval")
            let mismatch = try await peer.call(4, "turn/interrupt", ["threadId": thread, "turnId": "nope"])
            #expect(string(mismatch, "error", "message") == "expected active turn id nope but found \(turn)")
            try peer.send(["id": 5, "method": "turn/interrupt", "params": ["threadId": thread, "turnId": turn]])
            let messages = try await peer.inbox.collect(until: "resolved") { methodOf($0) == "serverRequest/resolved" }
            #expect(Array(shape(messages).suffix(3)) == ["thread/status/changed idle", "turn/completed", "serverRequest/resolved"])
            #expect(messages.contains { methodOf($0) == "response" && ($0["id"] as? Int) == 5 })
            let completed = try #require(messages.first { methodOf($0) == "turn/completed" })
            #expect(string(completed, "params", "turn", "status") == "interrupted")
            #expect(member(messages.last, "params", "requestId") as? Int == request["id"] as? Int)
            try peer.answer(request["id"] as? Int ?? 0, ["decision": "accept"])
            let after = try await peer.call(6, "turn/interrupt", ["threadId": thread, "turnId": turn])
            #expect(string(after, "error", "message") == "no active turn to interrupt")
            #expect(try await peer.inbox.pendingCount(after: .milliseconds(100)) { _ in true } == 0)
        }
    }

    @Test("question: item/tool/requestUserInput answered with {answers:{ID:{answers:[…]}}}")
    func question() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            _ = try await peer.startTurn(3, thread: thread, "ask me a question")
            let request = try await peer.serverRequest("item/tool/requestUserInput")
            let question = try #require((member(request, "params", "questions") as? [[String: Any]])?.first)
            let id = try #require(question["id"] as? String)
            #expect(question["header"] is String && question["question"] is String)
            try peer.answer(request["id"] as? Int ?? -1, ["answers": [id: ["answers": ["left"]]]])
            let messages = try await peer.untilTurnCompleted()
            #expect(shape(messages).contains("thread/status/changed active[waitingOnUserInput]"))
            #expect(string((member(messages.last, "params", "turn", "items") as? [Any])?.first, "text") == "Fake model reply. You answered: left")
        }
    }

    @Test("fail: an error notification, then the turn failed")
    func fail() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            _ = try await peer.startTurn(3, thread: thread, "please fail")
            let messages = try await peer.untilTurnCompleted()
            #expect(shape(messages).suffix(3) == ["error", "thread/status/changed idle", "turn/completed"])
            #expect(string(messages.last, "params", "turn", "status") == "failed")
            #expect(string(messages.last, "params", "turn", "error", "message") != nil)
        }
    }

    @Test("archive unloads, unarchive brings it back not loaded, name/set renames")
    func archive() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            _ = try await peer.startTurn(3, thread: thread, "hello")
            _ = try await peer.untilTurnCompleted()
            _ = peer.inbox.takeAll()
            try peer.send(["id": 4, "method": "thread/archive", "params": ["threadId": thread]])
            let archived = try await peer.inbox.collect(until: "thread/archived") { methodOf($0) == "thread/archived" }
            #expect(shape(archived) == ["thread/status/changed notLoaded", "thread/status/changed notLoaded", "response", "thread/archived"])
            #expect((member(try await peer.call(5, "thread/list", [:]), "result", "data") as? [Any])?.isEmpty == true)
            #expect((member(try await peer.call(6, "thread/list", ["archived": true]), "result", "data") as? [Any])?.count == 1)
            let unarchived = try await peer.call(7, "thread/unarchive", ["threadId": thread])
            #expect(string(unarchived, "result", "thread", "status", "type") == "notLoaded")
            _ = try await peer.notification("thread/unarchived")
            _ = try await peer.call(8, "thread/name/set", ["threadId": thread, "name": "renamed"])
            let renamed = try await peer.notification("thread/name/updated")
            #expect(string(renamed, "params", "threadName") == "renamed")
        }
    }

    @Test("every Nth request is refused as overloaded")
    func overload() async throws {
        try await withCodexAppServer(.init(pacing: .zero, overloadEvery: 3)) { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            _ = try await peer.call(2, "thread/loaded/list", [:])
            _ = try await peer.call(3, "thread/loaded/list", [:])
            #expect(peer.inbox.received.last == #"{"error":{"code":-32001,"message":"Server overloaded; retry later."},"id":3}"#)
        }
    }

    @Test("thread/readState/changed goes to experimentalApi clients only; optOutNotificationMethods suppresses by name")
    func capabilities() async throws {
        try await withCodexAppServer { _, port in
            let plain = try await AppServerWSPeer.connect(port: port)
            try await plain.initialize("plain", capabilities: ["experimentalApi": false])
            let experimental = try await AppServerWSPeer.connect(port: port)
            try await experimental.initialize("experimental", capabilities: [
                "experimentalApi": true, "optOutNotificationMethods": ["item/agentMessage/delta"],
            ])
            let thread = try await plain.startThread(2)
            _ = try await experimental.call(2, "thread/start", [:])  // a turn of its own makes a rollout
            _ = try await plain.startTurn(3, thread: thread, "hello")
            _ = try await plain.untilTurnCompleted()
            _ = try await experimental.call(3, "thread/resume", ["threadId": thread, "excludeTurns": true])
            _ = try await plain.startTurn(4, thread: thread, "hello again")
            let seenByPlain = try await plain.untilTurnCompleted()
            let seenByExperimental = try await experimental.untilTurnCompleted()
            #expect(!seenByPlain.contains { methodOf($0) == "thread/readState/changed" })
            #expect(seenByPlain.contains { methodOf($0) == "item/agentMessage/delta" })
            #expect(seenByExperimental.contains { methodOf($0) == "thread/readState/changed" })
            #expect(!seenByExperimental.contains { methodOf($0) == "item/agentMessage/delta" })
            let list = try await plain.call(5, "thread/list", [:])
            #expect((member(list, "result", "readStates") as? [String: Any])?[thread] != nil)
        }
    }

    @Test("draining: new work refused with serverShuttingDown, reads served; a waiting approval holds the drain until interrupted")
    func drain() async throws {
        try await withCodexAppServer { sim, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let thread = try await peer.startThread(5)
            let turn = try await peer.startTurn(6, thread: thread, "cmd")
            _ = try await peer.serverRequest("item/commandExecution/requestApproval")
            sim.beginDrain()
            try await Task.sleep(for: .milliseconds(100))
            #expect(!sim.drained.isFired)
            let resume = try await peer.call(7, "thread/resume", ["threadId": thread])
            #expect(member(resume, "error", "data", "reason") as? String == "serverShuttingDown")
            #expect(sim.activeTurns == 1)
            _ = try await peer.call(8, "turn/interrupt", ["threadId": thread, "turnId": turn])
            try await waitUntil { sim.drained.isFired }
            #expect(sim.activeTurns == 0)
            try peer.sendText(#"{"id":2,"method":"thread/start","params":{}}"#)
            _ = try await peer.response(2)
            #expect(peer.inbox.received.last
                == #"{"error":{"code":-32600,"data":{"reason":"serverShuttingDown"},"message":"Server is draining; retry after reconnecting"},"id":2}"#)
            #expect(member(try await peer.call(3, "thread/loaded/list", [:]), "result", "data") != nil)
        }
    }
}

/// Polls `condition` for up to two seconds.
func waitUntil(_ condition: @Sendable () -> Bool) async throws {
    let deadline = ContinuousClock.now.advanced(by: .seconds(2))
    while !condition() {
        guard ContinuousClock.now < deadline else { throw PeerFailure(description: "condition never held") }
        try await Task.sleep(for: .milliseconds(5))
    }
}
