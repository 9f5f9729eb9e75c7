import Foundation
import Testing
@testable import TetherSim

@Suite("CodexMonitor simulator: methods")
struct CodexMonitorMethodsTests {
    @Test("workspaces: WorkspaceInfo shape, connect errors, codex methods need a session")
    func workspaces() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let list = try await client.call(2, "list_workspaces", "{}").response
            #expect(list.text == #"{"id":2,"result":[{"id":"ws-1","name":"demo","path":"/srv/demo","connected":false,"kind":"main","parentId":null,"worktree":null,"settings":{"sidebarCollapsed":false,"sortOrder":null,"groupId":null,"cloneSourceWorkspaceId":null,"gitRoot":null,"launchScript":null,"launchScripts":null,"worktreeSetupScript":null,"worktreesFolder":null}}]}"#)

            #expect(try await client.call(3, "connect_workspace", #"{"id":"nope"}"#).response.errorMessage == "workspace not found")
            #expect(try await client.call(4, "connect_workspace", #"{"workspaceId":"ws-1"}"#).response.errorMessage == "missing or invalid `id`")
            #expect(try await client.call(5, "start_thread", #"{"workspaceId":"ws-1"}"#).response.errorMessage == "workspace not connected")
            #expect(try await client.call(6, "start_thread", "{}").response.errorMessage == "missing or invalid `workspaceId`")
            #expect(try await client.call(7, "start_thread", "[]").response.errorMessage == "missing `workspaceId`")
            #expect(try await client.call(8, "no_such_method").response.errorMessage == "unknown method: no_such_method")

            let (events, connected) = try await client.call(9, "connect_workspace", #"{"id":"ws-1"}"#)
            #expect(events.eventMethods == ["codex/connected"])
            #expect(connected.text == #"{"id":9,"result":{"ok":true}}"#)
            // Already connected: no second announcement.
            let (none, _) = try await client.call(10, "connect_workspace", #"{"id":"ws-1"}"#)
            #expect(none.isEmpty)
            #expect(try await client.call(11, "list_workspaces").response.value("result", "0", "connected") as? Bool == true)
        }
    }

    @Test("codex results are raw-wrapped; thread/list is not filtered by cwd")
    func rawResults() async throws {
        try await CodexMonitorHarness.run { simulator, client, _ in
            _ = try await client.call(2, "connect_workspace", #"{"id":"ws-1"}"#)
            let list = try await client.call(3, "list_threads", #"{"workspaceId":"ws-1","limit":20}"#).response
            #expect(list.value("result", "id") as? Int == 1)
            let data = try #require(list.value("result", "result", "data") as? [[String: Any]])
            #expect(data.map { $0["id"] as? String } == ["thr_0", "thr_elsewhere"])
            #expect(data.map { $0["cwd"] as? String } == ["/srv/demo", "/srv/elsewhere"])
            #expect(list.value("result", "result", "nextCursor") is NSNull)

            let page = try await client.call(4, "list_threads", #"{"workspaceId":"ws-1","limit":1}"#).response
            #expect(page.string("result", "result", "nextCursor") == "1")
            let rest = try await client.call(5, "list_threads", #"{"workspaceId":"ws-1","cursor":"1"}"#).response
            #expect(rest.string("result", "result", "data", "0", "id") == "thr_elsewhere")

            let (events, started) = try await client.call(6, "start_thread", #"{"workspaceId":"ws-1"}"#)
            #expect(events.eventMethods == ["thread/started"])
            #expect(events.first?.string("params", "message", "params", "thread", "id") == "thr_1")
            #expect(started.value("result", "id") as? Int == 4)
            #expect(started.string("result", "result", "thread", "id") == "thr_1")
            #expect(started.string("result", "result", "thread", "cwd") == "/srv/demo")
            #expect(started.string("result", "result", "thread", "status", "type") == "idle")
            #expect(started.string("result", "result", "model") == "gpt-5-codex")

            let read = try await client.call(7, "read_thread", #"{"workspaceId":"ws-1","threadId":"thr_0"}"#).response
            #expect((read.value("result", "result", "thread", "turns") as? [Any])?.isEmpty == true)

            let forwarded = simulator.appServerInputs.map(\.message)
            #expect(forwarded.contains(#"{"id":4,"method":"thread/start","params":{"cwd":"/srv/demo","approvalPolicy":"on-request"}}"#))
            #expect(forwarded.contains { $0.contains(#""method":"thread/list""#) && $0.contains(#""sourceKinds":["cli","vscode","appServer","subAgentReview","subAgentCompact","subAgentThreadSpawn","unknown"]"#) })
        }
    }

    @Test("app-server errors arrive as result.error inside a daemon success")
    func innerErrors() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            _ = try await client.call(2, "connect_workspace", #"{"id":"ws-1"}"#)
            let unknown = try await CodexMonitorHarness.send(client, id: 3, thread: "thr_missing", text: "hi")
            #expect(unknown.object["error"] == nil)
            #expect(unknown.value("result", "error", "code") as? Int == -32600)
            #expect(unknown.string("result", "error", "message") == "thread not found")
            #expect(unknown.value("result", "result") == nil)

            // A listed but unloaded thread needs resume_thread first.
            let unloaded = try await CodexMonitorHarness.send(client, id: 4, thread: "thr_0", text: "hi")
            #expect(unloaded.string("result", "error", "message") == "thread not found")

            let interrupt = try await client.call(5, "turn_interrupt", #"{"workspaceId":"ws-1","threadId":"thr_0","turnId":"turn_9"}"#).response
            #expect(interrupt.string("result", "error", "message") == "no active turn")

            let resume = try await client.call(6, "resume_thread", #"{"workspaceId":"ws-1","threadId":"thr_nope"}"#).response
            #expect(resume.string("result", "error", "message") == "thread not found")

            let empty = try await CodexMonitorHarness.send(client, id: 7, thread: "thr_0", text: "   ")
            #expect(empty.errorMessage == "empty user message")

            let missing = try await client.call(8, "respond_to_server_request", #"{"workspaceId":"ws-1","result":{}}"#).response
            #expect(missing.errorMessage == "missing requestId")
            let noResult = try await client.call(9, "respond_to_server_request", #"{"workspaceId":"ws-1","requestId":0}"#).response
            #expect(noResult.errorMessage == "missing `result`")
        }
    }

    @Test("resume_thread returns the history in thread.turns[].items, then turns work")
    func resumeHistory() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            _ = try await client.call(2, "connect_workspace", #"{"id":"ws-1"}"#)
            let resumed = try await client.call(3, "resume_thread", #"{"workspaceId":"ws-1","threadId":"thr_0"}"#).response
            #expect(resumed.string("result", "result", "thread", "turns", "0", "id") == "turn_0")
            #expect(resumed.string("result", "result", "thread", "turns", "0", "status") == "completed")
            let items = try #require(resumed.value("result", "result", "thread", "turns", "0", "items") as? [[String: Any]])
            #expect(items.map { $0["type"] as? String } == ["userMessage", "agentMessage"])
            #expect(items.last?["text"] as? String == "Done.")

            let sent = try await CodexMonitorHarness.send(client, id: 4, thread: "thr_0", text: "hello")
            #expect(sent.string("result", "result", "turn", "status") == "inProgress")
            _ = try await client.until(event: "turn/completed")
            let again = try await client.call(5, "resume_thread", #"{"workspaceId":"ws-1","threadId":"thr_0"}"#).response
            let turns = try #require(again.value("result", "result", "thread", "turns") as? [[String: Any]])
            #expect(turns.count == 2)
            #expect(turns.last?["status"] as? String == "completed")
        }
    }

    @Test("reordered mode: concurrent requests answered in reverse, send_user_message after turn/started")
    func reorderedResponses() async throws {
        try await CodexMonitorHarness.run(.init(token: "s3cret", reorderResponses: true)) { _, client, _ in
            client.send(#"{"id":2,"method":"ping"}"# + "\n" + #"{"id":3,"method":"list_workspaces","params":{}}"#)
            let first = try await client.next()
            let second = try await client.next()
            #expect([first.id, second.id] == [3, 2])

            let thread = try await CodexMonitorHarness.startThread(client, firstID: 4)
            client.send(#"{"id":6,"method":"send_user_message","params":{"workspaceId":"ws-1","threadId":"\#(thread)","text":"hello"}}"#)
            let lines = try await client.readUntil { $0.id == 6 }
            #expect(lines.eventMethods == ["turn/started", "thread/status/changed", "item/started", "item/completed"])
            #expect(lines.last?.string("result", "result", "turn", "status") == "inProgress")
            _ = try await client.until(event: "turn/completed")
        }
    }

    @Test("reordered mode: approval and interrupt responses trail the events they cause")
    func reorderedFollowUps() async throws {
        try await CodexMonitorHarness.run(.init(token: "s3cret", reorderResponses: true)) { _, client, _ in
            let thread = try await CodexMonitorHarness.startThread(client)
            _ = try await CodexMonitorHarness.send(client, id: 4, thread: thread, text: "run the tests")
            let request = try #require(try await client.until(event: "item/commandExecution/requestApproval").last?.event)
            let (before, ack) = try await client.call(
                5, "respond_to_server_request",
                #"{"workspaceId":"ws-1","requestId":\#(request["id"] as? Int ?? -1),"result":{"decision":"accept"}}"#
            )
            #expect(before.first?.eventMethod == "serverRequest/resolved")
            #expect(ack.value("result", "ok") as? Bool == true)
            _ = try await client.until(event: "turn/completed")

            let sent = try await CodexMonitorHarness.send(client, id: 6, thread: thread, text: "please wait")
            let turnID = try #require(sent.string("result", "result", "turn", "id"))
            let (events, interrupted) = try await client.call(
                7, "turn_interrupt", #"{"workspaceId":"ws-1","threadId":"\#(thread)","turnId":"\#(turnID)"}"#
            )
            let completed = try #require(events.last { $0.eventMethod == "turn/completed" })
            #expect(completed.string("params", "message", "params", "turn", "status") == "interrupted")
            #expect((interrupted.value("result", "result") as? [String: Any])?.isEmpty == true)
        }
    }

    @Test("thread housekeeping, live subscriptions and misc codex methods")
    func miscMethods() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            #expect(try await client.call(2, "daemon_info").response.string("result", "name") == "codex-monitor-daemon")
            _ = try await client.call(3, "connect_workspace", #"{"id":"ws-1"}"#)
            let models = try await client.call(4, "model_list", #"{"workspaceId":"ws-1"}"#).response
            #expect(models.string("result", "result", "data", "0", "id") == "gpt-5-codex")
            let limits = try await client.call(5, "account_rate_limits", #"{"workspaceId":"ws-1"}"#).response
            #expect(limits.value("result", "result", "rateLimits", "primary", "usedPercent") as? Int == 12)

            let (named, _) = try await client.call(6, "set_thread_name", #"{"workspaceId":"ws-1","threadId":"thr_0","name":"Tests"}"#)
            #expect(named.isEmpty)
            let nameEvent = try await client.next()
            #expect(nameEvent.eventMethod == "thread/name/updated")
            #expect(nameEvent.string("params", "message", "params", "threadName") == "Tests")

            let (attached, subscription) = try await client.call(7, "thread_live_subscribe", #"{"workspaceId":"ws-1","threadId":"thr_0"}"#)
            #expect(attached.eventMethods == ["thread/live_attached"])
            #expect(subscription.text == #"{"id":7,"result":{"subscriptionId":"ws-1:thr_0","state":"live"}}"#)
            let (detached, _) = try await client.call(8, "thread_live_unsubscribe", #"{"workspaceId":"ws-1","threadId":"thr_0"}"#)
            #expect(detached.first?.string("params", "message", "params", "reason") == "manual")

            _ = try await client.call(9, "archive_thread", #"{"workspaceId":"ws-1","threadId":"thr_0"}"#)
            #expect(try await client.next().eventMethod == "thread/archived")
            let list = try await client.call(10, "list_threads", #"{"workspaceId":"ws-1"}"#).response
            #expect((list.value("result", "result", "data") as? [[String: Any]])?.map { $0["id"] as? String } == ["thr_elsewhere"])

            let rule = try await client.call(11, "remember_approval_rule", #"{"workspaceId":"ws-1","command":["npm","test"]}"#).response
            #expect(rule.value("result", "ok") as? Bool == true)
        }
    }

    @Test("terminal methods emit terminal-output and terminal-exit")
    func terminals() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let ids = #""workspaceId":"ws-1","terminalId":"t1""#
            let (_, opened) = try await client.call(2, "terminal_open", #"{\#(ids),"cols":80,"rows":24}"#)
            #expect(opened.string("result", "id") == "t1")
            let prompt = try await client.next()
            #expect(prompt.text == #"{"method":"terminal-output","params":{"workspaceId":"ws-1","terminalId":"t1","data":"$ "}}"#)
            _ = try await client.call(3, "terminal_write", #"{\#(ids),"data":"exit\n"}"#)
            let echo = try await client.next()
            #expect(echo.string("params", "data") == "exit\r\n")
            let exit = try await client.next()
            #expect(exit.text == #"{"method":"terminal-exit","params":{"workspaceId":"ws-1","terminalId":"t1"}}"#)
        }
    }
}
