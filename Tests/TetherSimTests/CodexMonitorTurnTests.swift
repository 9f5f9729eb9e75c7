import Foundation
import Testing
@testable import TetherSim

@Suite("CodexMonitor simulator: scripted turns")
struct CodexMonitorTurnTests {
    /// Concatenated `item/agentMessage/delta`s per item id.
    static func streamedText(_ lines: [CodexMonitorLine]) -> [String: String] {
        var text: [String: String] = [:]
        for line in lines where line.eventMethod == "item/agentMessage/delta" {
            let params = line.eventParams ?? [:]
            text[params["itemId"] as? String ?? "", default: ""] += params["delta"] as? String ?? ""
        }
        return text
    }

    static func completedItems(_ lines: [CodexMonitorLine], type: String) -> [[String: Any]] {
        lines.filter { $0.eventMethod == "item/completed" }
            .compactMap { $0.eventParams?["item"] as? [String: Any] }
            .filter { $0["type"] as? String == type }
    }

    @Test("a streaming turn: response, then turn/started … item deltas … turn/completed")
    func streamingTurn() async throws {
        try await CodexMonitorHarness.run { simulator, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            let (before, response) = try await client.call(
                4, "send_user_message",
                #"{"workspaceId":"ws-1","threadId":"\#(thread)","text":"hello","model":"gpt-5-codex","accessMode":"read-only"}"#
            )
            #expect(before.isEmpty)
            #expect(response.value("result", "id") as? Int == 2)
            let turnID = try #require(response.string("result", "result", "turn", "id"))
            #expect(response.string("result", "result", "turn", "status") == "inProgress")

            let lines = try await client.until(event: "turn/completed")
            #expect(lines.allSatisfy { $0.method == "app-server-event" && $0.workspaceID == "ws-1" })
            #expect(lines.eventMethods == [
                "turn/started", "thread/status/changed", "item/started", "item/completed",
                "item/started", "item/reasoning/summaryPartAdded", "item/reasoning/summaryTextDelta",
                "item/reasoning/summaryTextDelta", "item/reasoning/textDelta", "item/completed", "turn/plan/updated",
                "item/started", "item/agentMessage/delta", "item/agentMessage/delta", "item/agentMessage/delta",
                "item/agentMessage/delta", "item/agentMessage/delta", "item/agentMessage/delta", "item/completed",
                "turn/plan/updated", "thread/tokenUsage/updated", "turn/completed",
            ])
            #expect(lines.allSatisfy { $0.event?["emittedAtMs"] is Int })
            #expect(lines.allSatisfy { ($0.eventParams?["turnId"] as? String ?? turnID) == turnID })

            let messages = Self.completedItems(lines, type: "agentMessage")
            let streamed = Self.streamedText(lines)
            let message = try #require(messages.first)
            #expect(streamed[message["id"] as? String ?? ""] == message["text"] as? String)
            #expect(Self.completedItems(lines, type: "userMessage").first.map { ($0["content"] as? [[String: Any]])?.first?["text"] as? String } == "hello")

            let completed = try #require(lines.last)
            #expect(completed.string("params", "message", "params", "turn", "status") == "completed")
            #expect((completed.value("params", "message", "params", "turn", "items") as? [Any])?.count == 3)
            _ = try await client.until(event: "thread/status/changed")

            let turnStart = try #require(simulator.appServerInputs.map(\.message).first { $0.contains(#""method":"turn/start""#) })
            #expect(turnStart == #"{"id":2,"method":"turn/start","params":{"threadId":"thr_1","input":[{"type":"text","text":"hello"}],"cwd":"/srv/demo","approvalPolicy":"on-request","sandboxPolicy":{"type":"readOnly"},"model":"gpt-5-codex","effort":null}}"#)
        }
    }

    enum DecisionCase: String, CaseIterable, Sendable {
        case accept, acceptForSession, amendment, decline, cancel, unrecognized

        var result: String {
            switch self {
            case .accept: #"{"decision":"accept"}"#
            case .acceptForSession: #"{"decision":"acceptForSession"}"#
            case .amendment: #"{"decision":{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["npm","test"]}}}"#
            case .decline: #"{"decision":"decline"}"#
            case .cancel: #"{"decision":"cancel"}"#
            // camelCase inner key: app-server does not understand it.
            case .unrecognized: #"{"decision":{"acceptWithExecpolicyAmendment":{"execpolicyAmendment":["npm","test"]}}}"#
            }
        }

        var itemStatus: String {
            switch self {
            case .accept, .acceptForSession, .amendment: "completed"
            case .decline, .cancel: "declined"
            case .unrecognized: "failed"
            }
        }

        var turnStatus: String { self == .cancel ? "interrupted" : "completed" }
    }

    @Test("command approval: each decision's follow-up", arguments: DecisionCase.allCases)
    func commandApproval(_ decision: DecisionCase) async throws {
        try await CodexMonitorHarness.run { simulator, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "run the tests")
            let lines = try await client.readUntil { $0.eventMethod == "item/commandExecution/requestApproval" }
            let request = try #require(lines.last?.event)
            let requestID = try #require(request["id"] as? Int)
            let params = try #require(request["params"] as? [String: Any])
            let itemID = try #require(params["itemId"] as? String)
            #expect(params["threadId"] as? String == thread)
            #expect(params["command"] as? String == "npm test")
            #expect(params["proposedExecpolicyAmendment"] as? [String] == ["npm", "test"])
            #expect(params["kind"] as? String == "command")
            #expect((params["availableDecisions"] as? [Any])?.count == 5)
            #expect(Self.completedItems(lines, type: "commandExecution").isEmpty)
            #expect(lines.contains { $0.eventMethod == "item/started" && ($0.eventParams?["item"] as? [String: Any])?["id"] as? String == itemID })

            let (_, ack) = try await client.call(
                5, "respond_to_server_request",
                #"{"workspaceId":"ws-1","requestId":\#(requestID),"result":\#(decision.result)}"#
            )
            #expect(ack.text == #"{"id":5,"result":{"ok":true}}"#)
            #expect(simulator.appServerInputs.last?.message == #"{"id":\#(requestID),"result":\#(decision.result)}"#)

            let after = try await client.until(event: "turn/completed")
            #expect(after.first?.eventMethod == "serverRequest/resolved")
            #expect(after.first?.eventParams?["requestId"] as? Int == requestID)
            let command = try #require(Self.completedItems(after, type: "commandExecution").first)
            #expect(command["status"] as? String == decision.itemStatus)
            let ran = after.filter { $0.eventMethod == "item/commandExecution/outputDelta" }
            if decision.itemStatus == "completed" {
                #expect(command["exitCode"] as? Int == 0)
                #expect(command["aggregatedOutput"] as? String == ran.compactMap { $0.eventParams?["delta"] as? String }.joined())
                #expect(!ran.isEmpty)
            } else {
                #expect(ran.isEmpty)
                #expect(command["exitCode"] is NSNull)
            }
            #expect(after.last?.string("params", "message", "params", "turn", "status") == decision.turnStatus)
            _ = try await client.until(event: "thread/status/changed")

            // A session approval or an amendment covers the next identical command in this thread.
            _ = try await CodexMonitorHarness.send(client, id: 6, thread: thread, text: "run the tests again")
            let next = try await client.readUntil {
                $0.eventMethod == "item/commandExecution/requestApproval" || $0.eventMethod == "turn/completed"
            }
            let skipsApproval = decision == .acceptForSession || decision == .amendment
            #expect(next.last?.eventMethod == (skipsApproval ? "turn/completed" : "item/commandExecution/requestApproval"))
        }
    }

    @Test("full-access turns run commands without asking")
    func fullAccessSkipsApproval() async throws {
        try await CodexMonitorHarness.run { simulator, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "run the failing tests",
                                                   extra: #","accessMode":"full-access""#)
            let lines = try await client.until(event: "turn/completed")
            #expect(!lines.eventMethods.contains("item/commandExecution/requestApproval"))
            let command = try #require(Self.completedItems(lines, type: "commandExecution").first)
            #expect(command["status"] as? String == "failed")
            #expect(command["exitCode"] as? Int == 1)
            let turnStart = simulator.appServerInputs.map(\.message).first { $0.contains("turn/start") } ?? ""
            #expect(turnStart.contains(#""approvalPolicy":"never","sandboxPolicy":{"type":"dangerFullAccess"}"#))
        }
    }

    @Test("a reply whose requestId has the wrong JSON type is ignored")
    func requestIDTypeMatters() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "run the tests")
            let request = try #require(try await client.until(event: "item/commandExecution/requestApproval").last?.event)
            let requestID = try #require(request["id"] as? Int)
            let (_, ack) = try await client.call(5, "respond_to_server_request",
                                                 #"{"workspaceId":"ws-1","requestId":"\#(requestID)","result":{"decision":"accept"}}"#)
            #expect(ack.value("result", "ok") as? Bool == true)
            #expect(await client.read(timeout: .milliseconds(200)).isTimedOut)
            _ = try await client.call(6, "respond_to_server_request",
                                      #"{"workspaceId":"ws-1","requestId":\#(requestID),"result":{"decision":"accept"}}"#)
            let rest = try await client.until(event: "turn/completed")
            #expect(rest.last?.string("params", "message", "params", "turn", "status") == "completed")
        }
    }

    @Test("file change approval: accept applies the patch, decline leaves it", arguments: ["accept", "decline"])
    func fileChangeApproval(_ decision: String) async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "edit the file")
            let lines = try await client.until(event: "item/fileChange/requestApproval")
            let started = lines.first { $0.eventMethod == "item/started" && ($0.eventParams?["item"] as? [String: Any])?["type"] as? String == "fileChange" }
            #expect(started?.string("params", "message", "params", "item", "changes", "0", "path") == "a.txt")
            #expect(started?.string("params", "message", "params", "item", "changes", "0", "kind", "type") == "update")
            #expect(lines.eventMethods.contains("item/fileChange/patchUpdated"))
            let request = try #require(lines.last?.event)
            #expect((request["params"] as? [String: Any])?["itemId"] as? String == started?.string("params", "message", "params", "item", "id"))
            _ = try await client.call(5, "respond_to_server_request",
                                      #"{"workspaceId":"ws-1","requestId":\#(request["id"] as? Int ?? -1),"result":{"decision":"\#(decision)"}}"#)
            let after = try await client.until(event: "turn/completed")
            let item = try #require(Self.completedItems(after, type: "fileChange").first)
            #expect(item["status"] as? String == (decision == "accept" ? "completed" : "declined"))
            #expect(after.eventMethods.contains("turn/diff/updated") == (decision == "accept"))
        }
    }

    @Test("turn_interrupt answers {} then the turn completes interrupted")
    func interrupt() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            let sent = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "please wait")
            let turnID = try #require(sent.string("result", "result", "turn", "id"))
            _ = try await client.readUntil { $0.eventMethod == "item/agentMessage/delta" }
            let (_, response) = try await client.call(
                5, "turn_interrupt", #"{"workspaceId":"ws-1","threadId":"\#(thread)","turnId":"\#(turnID)"}"#
            )
            #expect(response.value("result", "result") as? [String: Any] != nil)
            #expect((response.value("result", "result") as? [String: Any])?.isEmpty == true)
            let rest = try await client.until(event: "turn/completed")
            let turn = try #require(rest.last)
            #expect(turn.string("params", "message", "params", "turn", "id") == turnID)
            #expect(turn.string("params", "message", "params", "turn", "status") == "interrupted")
            #expect(turn.value("params", "message", "params", "turn", "error") is NSNull)
        }
    }

    @Test("interrupting a turn that waits on an approval clears the request")
    func interruptDuringApproval() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            let sent = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "run the tests")
            let turnID = try #require(sent.string("result", "result", "turn", "id"))
            let request = try #require(try await client.until(event: "item/commandExecution/requestApproval").last?.event)
            _ = try await client.call(5, "turn_interrupt", #"{"workspaceId":"ws-1","threadId":"\#(thread)","turnId":"\#(turnID)"}"#)
            let rest = try await client.until(event: "turn/completed")
            #expect(rest.first?.eventMethod == "serverRequest/resolved")
            #expect(rest.first?.eventParams?["requestId"] as? Int == request["id"] as? Int)
            #expect(rest.last?.string("params", "message", "params", "turn", "status") == "interrupted")
        }
    }

    @Test("a failed turn: a retrying error, a final error, turn/completed failed")
    func failedTurn() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "this will fail")
            let lines = try await client.until(event: "turn/completed")
            let errors = lines.filter { $0.eventMethod == "error" }
            #expect(errors.map { $0.eventParams?["willRetry"] as? Bool } == [true, false])
            #expect(errors.last?.string("params", "message", "params", "error", "message") == "Usage limit reached")
            #expect(errors.last?.string("params", "message", "params", "error", "codexErrorInfo") == "usageLimitExceeded")
            let turn = try #require(lines.last)
            #expect(turn.string("params", "message", "params", "turn", "status") == "failed")
            #expect(turn.string("params", "message", "params", "turn", "error", "message") == "Usage limit reached")
        }
    }

    @Test("resume_thread re-announces a pending approval, which another connection can answer")
    func resumeReannouncesApproval() async throws {
        try await CodexMonitorHarness.run { _, client, port in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "run the tests")
            let original = try #require(try await client.until(event: "item/commandExecution/requestApproval").last)

            let laptop = try CodexMonitorLineClient(port: port)
            defer { laptop.close() }
            _ = try await laptop.call(1, "auth", #"{"token":"s3cret"}"#)
            let (_, resumed) = try await laptop.call(2, "resume_thread", #"{"workspaceId":"ws-1","threadId":"\#(thread)"}"#)
            #expect(resumed.string("result", "result", "thread", "status", "type") == "active")
            #expect((resumed.value("result", "result", "thread", "status", "activeFlags") as? [String]) == ["waitingOnApproval"])
            let turn = try #require((resumed.value("result", "result", "thread", "turns") as? [[String: Any]])?.last)
            #expect(turn["status"] as? String == "inProgress")
            #expect((turn["items"] as? [[String: Any]])?.map { $0["type"] as? String } == ["userMessage", "agentMessage", "commandExecution"])

            let again = try await laptop.next()
            #expect(again.eventMethod == "item/commandExecution/requestApproval")
            #expect(again.text == original.text)
            // Broadcast: the first client sees the re-announcement too.
            #expect(try await client.next().text == original.text)

            let requestID = try #require(again.event?["id"] as? Int)
            _ = try await laptop.call(3, "respond_to_server_request",
                                      #"{"workspaceId":"ws-1","requestId":\#(requestID),"result":{"decision":"accept"}}"#)
            let done = try await client.until(event: "turn/completed")
            #expect(done.last?.string("params", "message", "params", "turn", "status") == "completed")
        }
    }

    @Test("lagging connections miss deltas but item/completed carries the whole text")
    func lagEvents() async throws {
        try await CodexMonitorHarness.run(.init(token: "s3cret", lagEvents: true)) { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "long 10")
            let lines = try await client.until(event: "turn/completed")
            let deltas = lines.filter { $0.eventMethod == "item/agentMessage/delta" }
            #expect(deltas.count == 1)
            let message = try #require(Self.completedItems(lines, type: "agentMessage").first)
            #expect(message["text"] as? String == (0..<10).map { "tok\($0) " }.joined())
        }
    }

    @Test("long N streams N deltas")
    func longStream() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "long 2000")
            let lines = try await client.until(event: "turn/completed")
            #expect(lines.filter { $0.eventMethod == "item/agentMessage/delta" }.count == 2000)
            let streamed = Self.streamedText(lines)
            let message = try #require(Self.completedItems(lines, type: "agentMessage").first)
            #expect(streamed[message["id"] as? String ?? ""] == message["text"] as? String)
        }
    }

    @Test("noise: synthetic codex events, terminal notifications, per-workspace rate limits")
    func noise() async throws {
        let workspaces = [
            CodexMonitorSimulator.Workspace(id: "ws-1", name: "demo", path: "/srv/demo"),
            CodexMonitorSimulator.Workspace(id: "ws-2", name: "other", path: "/srv/other"),
        ]
        try await CodexMonitorHarness.run(.init(token: "s3cret", workspaces: workspaces)) { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            // The second workspace joins the shared app-server: no second codex/connected.
            let (joined, _) = try await client.call(4, "connect_workspace", #"{"id":"ws-2"}"#)
            #expect(joined.isEmpty)
            _ = try await CodexMonitorHarness.send(client, id: 5, thread: thread, text: "noise")
            let lines = try await client.until(event: "turn/completed")
            for method in ["codex/stderr", "codex/parseError", "codex/backgroundThread", "configWarning"] {
                #expect(lines.eventMethods.contains(method))
            }
            let limits = lines.filter { $0.eventMethod == "account/rateLimits/updated" }
            #expect(limits.compactMap(\.workspaceID).sorted() == ["ws-1", "ws-2"])
            #expect(lines.contains { $0.method == "terminal-output" && $0.string("params", "terminalId") == "term-1" })
            #expect(lines.contains { $0.method == "terminal-exit" })
        }
    }

    @Test("legacy codex: no resolved event, no stamps, empty turn.items, no re-announcement")
    func legacyFlavor() async throws {
        try await CodexMonitorHarness.run(.init(token: "s3cret", codex: .legacy)) { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "run the tests")
            let lines = try await client.until(event: "item/commandExecution/requestApproval")
            #expect(lines.allSatisfy { $0.event?["emittedAtMs"] == nil })
            #expect(!lines.eventMethods.contains("thread/status/changed"))
            let request = try #require(lines.last?.event)
            #expect((request["params"] as? [String: Any])?["availableDecisions"] == nil)

            let (_, resumed) = try await client.call(5, "resume_thread", #"{"workspaceId":"ws-1","threadId":"\#(thread)"}"#)
            #expect(resumed.string("result", "result", "thread", "id") == thread)
            _ = try await client.call(6, "respond_to_server_request",
                                      #"{"workspaceId":"ws-1","requestId":\#(request["id"] as? Int ?? -1),"result":{"decision":"accept"}}"#)
            let after = try await client.until(event: "turn/completed")
            #expect(!after.eventMethods.contains("serverRequest/resolved"))
            #expect(!after.eventMethods.contains("item/commandExecution/requestApproval"))
            #expect((after.last?.value("params", "message", "params", "turn", "items") as? [Any])?.isEmpty == true)
        }
    }

    @Test("pacing spaces scripted messages")
    func pacing() async throws {
        try await CodexMonitorHarness.run(.init(token: "s3cret", pacing: .milliseconds(20))) { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            let clock = ContinuousClock()
            let start = clock.now
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "make it fail")
            let lines = try await client.until(event: "turn/completed")
            // turn/started, status, user item ×2, error ×2, turn/completed: at least 7 paced steps.
            #expect(lines.count >= 7)
            #expect(clock.now - start >= .milliseconds(140))
        }
    }
}

extension CodexMonitorLineClient.Read {
    var isTimedOut: Bool {
        if case .timedOut = self { return true }
        return false
    }
}
