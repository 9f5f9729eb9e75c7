import TetherCodexProtocol
import Foundation
import Synchronization
import Testing
import TetherCore
@testable import TetherCodexMonitor

/// The backend against scripted daemons on in-memory connections: which methods it calls, with
/// which (camelCase) params, and what it makes of the answers.
@Suite struct CodexMonitorBackendTests {
    static let twoWorkspaces = #"[{"id":"ws-1","name":"demo","path":"/srv/demo","connected":true,"settings":{"sidebarCollapsed":false}},{"id":"ws-2","name":"other","path":"/srv/other","connected":false,"settings":{"sidebarCollapsed":false}}]"#
    static let threadList = #"{"id":1,"result":{"data":[{"id":"thr_0","preview":"fix tests","cwd":"/srv/demo","createdAt":1767000000,"updatedAt":1767000100,"status":{"type":"notLoaded"},"turns":[]},{"id":"thr_x","preview":"elsewhere","cwd":"/srv/other","createdAt":1767000000,"updatedAt":1767000500,"status":{"type":"idle"},"turns":[]},{"id":"thr_1","preview":"run","cwd":"/srv/demo","createdAt":1767000000,"updatedAt":1767000300,"status":{"type":"active","activeFlags":["waitingOnApproval"]},"turns":[]}],"nextCursor":null}}"#

    @Test func sessionsListKeepsTheWorkspacesThreadsByCwd() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request, workspaces: Self.twoWorkspaces) { return }
            if request["method"] == "list_threads" { daemon.respond(request, Self.threadList) }
        }
        let sessions = try await CodexMonitorBackend.test([daemon]).listSessions(SessionListRequest())
        #expect(sessions.map(\.id) == ["ws-1~thr_1", "ws-1~thr_0"])
        #expect(sessions[0].status == .waitingApproval)
        #expect(sessions[1].updatedAt == 1_767_000_100_000)
        // Auth first; only the connected workspace is listed (ws-2 would need Codex started).
        #expect(daemon.methods.first == "auth")
        #expect(daemon.requests("list_threads").map { $0["params"]?["workspaceId"] } == ["ws-1"])
        #expect(daemon.requests("connect_workspace").isEmpty)
    }

    @Test func sessionsCreateConnectsTheWorkspaceFirstThenStartsAThread() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request, workspaces: Self.twoWorkspaces) { return }
            switch request["method"]?.string {
            case "start_thread":
                daemon.event(#"{"method":"thread/started","params":{"thread":{"id":"thr_9","preview":"","cwd":"/srv/other","createdAt":1767000200,"updatedAt":1767000200,"status":{"type":"idle"},"turns":[]}}}"#, workspace: "ws-2")
                daemon.respond(request, #"{"id":2,"result":{"thread":{"id":"thr_9","preview":"","cwd":"/srv/other","createdAt":1767000200,"updatedAt":1767000200,"status":{"type":"idle"},"turns":[]},"model":"gpt-5-codex"}}"#)
            case "set_thread_name": daemon.respond(request, #"{"id":3,"result":{}}"#)
            default: break
            }
        }
        let session = try await CodexMonitorBackend.test([daemon]).createSession(SessionCreateRequest(title: "Fix CI", directory: "/srv/other/"))
        #expect(session.id == "ws-2~thr_9")
        #expect(session.title == "Fix CI")
        #expect(daemon.methods == ["auth", "list_workspaces", "connect_workspace", "start_thread", "set_thread_name"])
        #expect(daemon.requests("connect_workspace").first?["params"] == ["id": "ws-2"])
        #expect(daemon.requests("start_thread").first?["params"] == ["workspaceId": "ws-2"])
        #expect(daemon.requests("set_thread_name").first?["params"] == ["workspaceId": "ws-2", "threadId": "thr_9", "name": "Fix CI"])
    }

    @Test func sendUsesCamelCaseParamsAndReadsTheTurnFromTheRawResult() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "send_user_message" {
                daemon.respond(request, #"{"id":4,"result":{"turn":{"id":"turn_1","items":[],"status":"inProgress","error":null}}}"#)
            }
        }
        let backend = CodexMonitorBackend.test([daemon]) { $0.accessMode = "read-only" }
        let receipt = try await backend.send(SendRequest(session: "ws-1~thr_1", text: "run the tests", model: "gpt-5-codex"))
        #expect(receipt.turn == "turn_1")
        #expect(receipt.session == "ws-1~thr_1")
        #expect(daemon.requests("send_user_message").first?["params"]
                == ["workspaceId": "ws-1", "threadId": "thr_1", "text": "run the tests", "model": "gpt-5-codex", "accessMode": "read-only"])
        #expect(daemon.requests("connect_workspace").first?["params"] == ["id": "ws-1"])
    }

    @Test func sendResumesAThreadCodexHasNotLoadedAndRetriesOnce() async throws {
        let attempts = Mutex(0)
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            switch request["method"]?.string {
            case "send_user_message":
                let attempt = attempts.withLock { $0 += 1; return $0 }
                if attempt == 1 {
                    daemon.respond(request, #"{"id":4,"error":{"code":-32600,"message":"thread not loaded: thr_1"}}"#)
                } else {
                    daemon.respond(request, #"{"id":6,"result":{"turn":{"id":"turn_2","items":[],"status":"inProgress","error":null}}}"#)
                }
            case "resume_thread": daemon.respond(request, #"{"id":5,"result":{"thread":{"id":"thr_1","turns":[]}}}"#)
            default: break
            }
        }
        let receipt = try await CodexMonitorBackend.test([daemon]).send(SendRequest(session: "ws-1~thr_1", text: "again"))
        #expect(receipt.turn == "turn_2")
        #expect(daemon.methods.suffix(3) == ["send_user_message", "resume_thread", "send_user_message"])
    }

    @Test func anInnerErrorIsReportedAsAFailure() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            daemon.respond(request, #"{"id":6,"error":{"code":-32600,"message":"no active turn"}}"#)
        }
        let error = await #expect(throws: TetherError.self) {
            try await CodexMonitorBackend.test([daemon]).abort(session: "ws-1~thr_1", turn: "turn_1")
        }
        #expect(error?.code == .failed)
        #expect(error?.message.contains("no active turn") == true)
        #expect(daemon.requests("turn_interrupt").first?["params"] == ["workspaceId": "ws-1", "threadId": "thr_1", "turnId": "turn_1"])
    }

    @Test func abortWithoutATurnFindsTheRunningOne() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            switch request["method"]?.string {
            case "resume_thread":
                daemon.respond(request, #"{"id":3,"result":{"thread":{"id":"thr_1","turns":[{"id":"turn_0","status":"completed","items":[]},{"id":"turn_1","status":"inProgress","items":[]}]}}}"#)
            case "turn_interrupt": daemon.respond(request, #"{"id":5,"result":{}}"#)
            default: break
            }
        }
        try await CodexMonitorBackend.test([daemon], workspace: "ws-1").abort(session: "thr_1", turn: nil)
        #expect(daemon.requests("turn_interrupt").first?["params"]?["turnId"] == "turn_1")
    }

    /// `resume_thread`'s answer for thr_1 while turn_1 waits on approval (codex-cli 0.163.0's shape).
    static let waitingThread = #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"active","activeFlags":["waitingOnApproval"]},"turns":[{"id":"turn_0","status":"completed","items":[]},{"id":"turn_1","status":"inProgress","items":[]}]}}}"#

    @Test func approveSendsTheDecisionShapeAndTheRequestIdAsItArrived() async throws {
        let handler: FakeDaemon.Handler = { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" { daemon.respond(request, Self.waitingThread) }
            if request["method"] == "respond_to_server_request" { daemon.respond(request, #"{"ok":true}"#) }
        }
        let daemons = [FakeDaemon(handler), FakeDaemon(handler)]  // one connection per command
        let backend = CodexMonitorBackend.test(daemons)
        let event = try await backend.approve(id: "ws-1~thr_1~0~cmd~turn_1", answer: ApprovalAnswer(decision: .acceptWithAmendment, amendment: ["npm", "test"]))
        #expect(event.type == .approvalResolved)
        #expect(event.session == "ws-1~thr_1")
        #expect(event.data == ["id": "ws-1~thr_1~0~cmd~turn_1", "decision": "accept_with_amendment"])
        // An id from an older Tether (no turn) is still answered while its thread runs.
        _ = try await backend.approve(id: "ws-1~thr_1~s:0~file", answer: ApprovalAnswer(decision: .decline))

        let answers = daemons.flatMap { $0.requests("respond_to_server_request") }.map { $0["params"]!.serialized }
        #expect(answers == [
            #"{"workspaceId":"ws-1","requestId":0,"result":{"decision":{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["npm","test"]}}}}"#,
            #"{"workspaceId":"ws-1","requestId":"0","result":{"decision":"decline"}}"#,
        ])
        // Answering does not start Codex anywhere; it reads the thread first.
        #expect(daemons.allSatisfy { $0.requests("connect_workspace").isEmpty })
        #expect(daemons.map { $0.requests("resume_thread").first?["params"] } == [
            ["workspaceId": "ws-1", "threadId": "thr_1"], ["workspaceId": "ws-1", "threadId": "thr_1"],
        ])

        await #expect(throws: TetherError.self) { _ = try await backend.approve(id: "nonsense", answer: ApprovalAnswer(decision: .accept)) }
    }

    /// app-server numbers its requests from 0 again after a restart, and the daemon relays an
    /// answer to whichever request has the id: an approval from before must not be answered.
    @Test(arguments: [
        // After a restart: the thread is idle and the turn that asked was interrupted.
        #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"idle"},"turns":[{"id":"turn_1","status":"interrupted","items":[]}]}}}"#,
        // … and a new turn in the same thread is waiting on a request that took number 0 again.
        #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"active","activeFlags":["waitingOnApproval"]},"turns":[{"id":"turn_1","status":"interrupted","items":[]},{"id":"turn_2","status":"inProgress","items":[]}]}}}"#,
        // An app-server without thread status: the turn's own status still tells.
        #"{"id":3,"result":{"thread":{"id":"thr_1","turns":[{"id":"turn_1","status":"completed","items":[]}]}}}"#,
        // A history without the turn, but with another one running.
        #"{"id":3,"result":{"thread":{"id":"thr_1","turns":[{"id":"turn_9","status":"inProgress","items":[]}]}}}"#,
        // No turns at all, and an idle thread.
        #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"idle"}}}}"#,
    ])
    func anApprovalWhoseTurnIsNotRunningIsNotAnswered(thread: String) async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" { daemon.respond(request, thread) }
            if request["method"] == "respond_to_server_request" { daemon.respond(request, #"{"ok":true}"#) }
        }
        let error = await #expect(throws: TetherError.self) {
            try await CodexMonitorBackend.test([daemon]).approve(id: "ws-1~thr_1~0~cmd~turn_1", answer: ApprovalAnswer(decision: .accept))
        }
        #expect(error?.code == .notFound)
        #expect(error?.message.contains("approval ws-1~thr_1~0~cmd~turn_1 is no longer pending") == true, "\(String(describing: error))")
        #expect(daemon.requests("respond_to_server_request").isEmpty)
    }

    /// What the thread does not say is not held against an approval; a running turn outranks an
    /// idle thread status (older app-servers reported a thread resumed mid-turn as idle).
    @Test(arguments: [
        #"{"id":"thr_1","status":{"type":"idle"},"turns":[{"id":"turn_1","status":"inProgress"}]}"#,
        #"{"id":"thr_1","status":{"type":"active"},"turns":[]}"#,
        #"{"id":"thr_1","status":{"type":"active"},"turns":[{"id":"turn_1"}]}"#,
        #"{"id":"thr_1"}"#,
        #"{"id":"thr_1","status":"active","turns":[{"id":"turn_0","status":"completed"}]}"#,
    ])
    func aThreadThatDoesNotSayOtherwiseMayHaveTheRequestWaiting(thread: String) {
        #expect(CodexThread.whyNotWaiting(json(thread), turn: "turn_1") == nil)
    }

    @Test func aDaemonWithoutResumeThreadIsAnsweredUnchecked() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" { daemon.fail(request, "unknown method: resume_thread") }
            if request["method"] == "respond_to_server_request" { daemon.respond(request, #"{"ok":true}"#) }
        }
        _ = try await CodexMonitorBackend.test([daemon]).approve(id: "ws-1~thr_1~0~cmd~turn_1", answer: ApprovalAnswer(decision: .accept))
        #expect(daemon.requests("respond_to_server_request").count == 1)
    }

    @Test func approvalsAreWhatCodexReannouncesWhenTheActiveThreadsAreResumed() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request, workspaces: Self.twoWorkspaces) { return }
            switch request["method"]?.string {
            case "list_threads": daemon.respond(request, Self.threadList)
            case "resume_thread":
                #expect(request["params"] == ["workspaceId": "ws-1", "threadId": "thr_1"])
                daemon.respond(request, #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"active"},"turns":[{"id":"turn_1","status":"inProgress","items":[{"type":"commandExecution","id":"it_c1","command":"npm test","status":"inProgress"}]}]}}}"#)
                daemon.event(#"{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"thr_1","turnId":"turn_1","itemId":"it_c1","command":"npm test","cwd":"/srv/demo"}}"#)
            default: break
            }
        }
        let approvals = try await CodexMonitorBackend.test([daemon]).pendingApprovals(session: nil)
        #expect(approvals.map(\.id) == ["ws-1~thr_1~0~cmd~turn_1~it_c1"])
        #expect(approvals.first?.command == "npm test")
        // Only the active thread was resumed.
        #expect(daemon.requests("resume_thread").count == 1)
    }

    @Test func historyComesFromResumeThread() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" {
                daemon.respond(request, #"{"id":3,"result":{"thread":{"id":"thr_0","preview":"fix tests","cwd":"/srv/demo","createdAt":1767000000,"updatedAt":1767000100,"status":{"type":"idle"},"turns":[{"id":"turn_0","status":"completed","error":null,"items":[{"type":"userMessage","id":"it_u0","content":[{"type":"text","text":"fix tests"}]},{"type":"agentMessage","id":"it_a0","text":"Done."}]}]}}}"#)
            }
        }
        let events = try await CodexMonitorBackend.test([daemon]).history(session: "ws-1~thr_0", limit: nil)
        #expect(events.map(\.type) == [.turnStarted, .partCompleted, .partCompleted, .turnCompleted])
        #expect(events.compactMap { $0.data["text"]?.string } == ["fix tests", "Done."])
    }

    @Test func sendAndFollowStreamsItsTurnEvenWhenTurnStartedBeatsTheResponse() async throws {
        let lines = try Transcript.lines("streaming-turn")
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            switch request["method"]?.string {
            case "resume_thread":
                daemon.respond(request, #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"idle"},"turns":[]}}}"#)
            case "send_user_message":
                // Another thread's noise, then the transcript with turn/started before the response.
                daemon.event(#"{"method":"turn/started","params":{"threadId":"thr_other","turn":{"id":"turn_9","items":[],"status":"inProgress"}}}"#)
                for line in lines {
                    if line["id"] != nil, line["result"]?["ok"] == nil {
                        daemon.respond(request, line["result"]!.serialized)
                    } else if line["method"] != nil {
                        daemon.send(line.serialized)
                    }
                }
            default: break
            }
        }
        let backend = CodexMonitorBackend.test([daemon])
        let events = try await collect(backend.sendAndFollow(SendRequest(session: "ws-1~thr_1", text: "run the tests")))
        let domain = events.filter { $0.type != .connectionState }
        #expect(domain.first?.type == .turnStarted)
        #expect(domain.last?.type == .turnCompleted)
        #expect(domain.allSatisfy { $0.session == "ws-1~thr_1" && ($0.turn == "turn_1" || $0.type == .sessionStatus) })
        #expect(domain.of(.approvalRequested).count == 1)
        #expect(domain.of(.partCompleted).count == 3)
        #expect(domain.last?.raw?["method"] == "app-server-event")
        #expect(events.first?.data["state"] == "connecting")
        // Subscribed (connected, resynced) before sending.
        #expect(daemon.methods.firstIndex(of: "resume_thread")! < daemon.methods.firstIndex(of: "send_user_message")!)
    }

    @Test func eventsReconnectAndEmitWhatWasMissedWithoutDuplicates() async throws {
        let transcript = try Transcript.lines("streaming-turn").filter { $0["method"] != nil }
        let running = #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"active"},"turns":[{"id":"turn_1","status":"inProgress","items":[]}]}}}"#
        let finished = #"""
        {"id":7,"result":{"thread":{"id":"thr_1","status":{"type":"idle"},"turns":[{"id":"turn_1","status":"completed","error":null,"items":[
          {"type":"userMessage","id":"it_u1","content":[{"type":"text","text":"run the tests"}]},
          {"type":"agentMessage","id":"it_a1","text":"I'll run the tests."},
          {"type":"commandExecution","id":"it_c1","command":"npm test","cwd":"/srv/demo","status":"completed","aggregatedOutput":"3 passing\n","exitCode":0}]}]}}}
        """#.replacingOccurrences(of: "\n", with: "")
        // First connection: the turn is running; half of it streams, then the link drops.
        let first = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" {
                daemon.respond(request, running)
                for line in transcript.prefix(9) { daemon.send(line.serialized) }  // up to the approval request
                daemon.hangUp()
            }
        }
        // Second connection: the turn ended meanwhile, and Codex does not replay.
        let second = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" { daemon.respond(request, finished) }
        }
        let backend = CodexMonitorBackend.test([first, second])
        let events = try await collect(backend.events(EventsRequest(session: "ws-1~thr_1", follow: true))) {
            $0.type == .turnCompleted
        }
        let states = events.of(.connectionState).compactMap { $0.data["state"]?.string }
        #expect(states == ["connecting", "connected", "reconnecting", "connected"])
        #expect(events.of(.turnStarted).map(\.turn) == ["turn_1"])
        #expect(events.of(.partCompleted).map(\.part) == ["it_u1", "it_a1", "it_c1"])
        #expect(events.of(.partCompleted).last?.data["output"] == "3 passing\n")
        #expect(events.of(.approvalRequested).count == 1)
        #expect(events.of(.approvalResolved).map { $0.data["decision"] } == ["accept"])
        #expect(events.last?.type == .turnCompleted)
    }

    /// The turn ends while the link is down: the resync after the reconnect reads it, and what
    /// it read goes out before `send --follow` ends (it once ended with those events unsent).
    @Test func sendAndFollowFinishesOnATurnThatOnlyTheResyncSaw() async throws {
        let finished = #"{"id":7,"result":{"thread":{"id":"thr_1","status":{"type":"idle"},"turns":[{"id":"turn_1","status":"completed","error":null,"items":[{"type":"agentMessage","id":"it_a1","text":"Done."}]}]}}}"#
        let first = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            switch request["method"]?.string {
            case "resume_thread":
                daemon.respond(request, #"{"id":3,"result":{"thread":{"id":"thr_1","status":{"type":"idle"},"turns":[]}}}"#)
            case "send_user_message":
                daemon.respond(request, #"{"id":4,"result":{"turn":{"id":"turn_1","items":[],"status":"inProgress","error":null}}}"#)
                daemon.hangUp()
            default: break
            }
        }
        let second = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" { daemon.respond(request, finished) }
        }
        let events = try await collect(CodexMonitorBackend.test([first, second])
            .sendAndFollow(SendRequest(session: "ws-1~thr_1", text: "finish it")))
        #expect(events.of(.turnCompleted).map(\.turn) == ["turn_1"])
        #expect(events.of(.partCompleted).compactMap { $0.data["text"]?.string } == ["Done."])
        #expect(events.last?.type == .turnCompleted)
        #expect(second.requests("send_user_message").isEmpty)  // sent once, on the first connection
    }

    @Test func aProfileWorkspaceThatDoesNotExistIsAConfigurationError() async throws {
        let daemon = FakeDaemon { request, daemon in _ = daemon.answerBasics(request) }
        let error = await #expect(throws: TetherError.self) {
            _ = try await CodexMonitorBackend.test([daemon], workspace: "ws-404").listSessions(SessionListRequest())
        }
        #expect(error?.exitCode == 78)
        #expect(error?.hint?.contains("ws-1 (demo, /srv/demo)") == true)
    }

    @Test func eventsOfOtherWorkspacesAreFilteredWhenTheProfileNamesOne() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request, workspaces: Self.twoWorkspaces) { return }
            if request["method"] == "list_threads" {
                daemon.respond(request, #"{"id":1,"result":{"data":[],"nextCursor":null}}"#)
                daemon.event(#"{"method":"turn/started","params":{"threadId":"thr_x","turn":{"id":"turn_x"}}}"#, workspace: "ws-2")
                daemon.event(#"{"method":"turn/started","params":{"threadId":"thr_1","turn":{"id":"turn_1"}}}"#)
            }
        }
        let events = try await collect(CodexMonitorBackend.test([daemon], workspace: "ws-1").events(EventsRequest(follow: true))) {
            $0.type == .turnStarted
        }
        #expect(events.of(.turnStarted).map(\.session) == ["ws-1~thr_1"])
        #expect(daemon.requests("list_threads").map { $0["params"]?["workspaceId"] } == ["ws-1"])
    }
}

/// `serverRequest/resolved` does not say how a request was answered: the stream reports the
/// decision this process sent, and "unknown" only for answers from elsewhere.
@Suite struct CodexAnswerLedgerTests {
    let resolved = Event.approvalResolved(id: "ws-1~thr_1~0~cmd", session: "ws-1~thr_1", turn: "turn_1",
                                          decision: CodexDecision.undetermined)

    @Test func anAnswerSentHereFillsInTheDecision() {
        let ledger = CodexAnswerLedger()
        ledger.record(.acceptForSession, for: "ws-1~thr_1~0~cmd")
        #expect(ledger.filledIn(resolved).data["decision"] == "accept_for_session")
    }

    @Test func anAnswerFromElsewhereStaysUnknownAndKnownDecisionsStay() {
        let ledger = CodexAnswerLedger()
        ledger.record(.accept, for: "ws-1~thr_1~1~cmd")
        #expect(ledger.filledIn(resolved).data["decision"] == "unknown")
        let declined = Event.approvalResolved(id: "ws-1~thr_1~1~cmd", session: nil, turn: nil, decision: "decline")
        #expect(ledger.filledIn(declined).data["decision"] == "decline")
    }

    @Test func anAnswerThatWasNotSentIsForgotten() async throws {
        let daemon = FakeDaemon { request, daemon in
            if daemon.answerBasics(request) { return }
            if request["method"] == "resume_thread" { daemon.respond(request, CodexMonitorBackendTests.waitingThread) }
            if request["method"] == "respond_to_server_request" { daemon.fail(request, "workspace not connected") }
        }
        let backend = CodexMonitorBackend.test([daemon])
        let error = await #expect(throws: TetherError.self) {
            try await backend.approve(id: "ws-1~thr_1~0~cmd~turn_1~it_c1", answer: ApprovalAnswer(decision: .accept))
        }
        #expect(error?.code == .notFound)
        // Resolved later (the app-server was replaced): not as if we had accepted it.
        let resolved = Event.approvalResolved(id: "ws-1~thr_1~0~cmd~turn_1~it_c1", session: "ws-1~thr_1", turn: "turn_1",
                                              decision: CodexDecision.undetermined)
        #expect(backend.answers.filledIn(resolved).data["decision"] == "unknown")
    }

    @Test func copiesOfTheBackendShareOneLedger() {
        let backend = CodexMonitorBackend.test([])
        let copy = backend
        copy.answers.record(.decline, for: "ws-1~thr_1~0~cmd")
        #expect(backend.answers.filledIn(resolved).data["decision"] == "decline")
    }
}
