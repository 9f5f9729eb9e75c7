import TetherCodexProtocol
import Foundation
import Testing
import TetherCore
@testable import TetherCodexMonitor
import TetherStreaming

@Suite struct CodexAppServerMapperTests {
    let session = "ws-1~thr_1"

    @Test func mapsAStreamingTurnWithACommandApproval() throws {
        var mapper = CodexAppServerMapper()
        let events = try Transcript.map("streaming-turn", into: &mapper)

        #expect(events.allSatisfy { $0.session == session })
        #expect(events.of(.turnStarted).map(\.turn) == ["turn_1"])
        #expect(events.statuses == ["busy", "waiting_approval", "busy", "idle"])

        #expect(events.of(.partStarted).map(\.part) == ["it_u1", "it_a1", "it_c1"])
        #expect(events.of(.partStarted).first?.data["text"] == "")
        let completed = events.of(.partCompleted)
        #expect(completed.map(\.part) == ["it_u1", "it_a1", "it_c1"])
        #expect(completed[0].data["role"] == "user")
        #expect(completed[0].data["text"] == "run the tests")
        #expect(completed[1].data["role"] == "assistant")
        #expect(completed[1].data["text"] == "I'll run the tests.")
        #expect(completed[2].data["kind"] == "command")
        #expect(completed[2].data["command"] == "npm test")
        #expect(completed[2].data["output"] == "3 passing\n")
        #expect(completed[2].data["exit_code"] == 0)
        #expect(completed[2].data["status"] == "completed")
        #expect(events.assembledDeltas == ["it_a1": "I'll run the tests.", "it_c1": "3 passing\n"])
        #expect(events.of(.partDelta).last?.data["field"] == "output")

        let approval = try #require(events.of(.approvalRequested).first)
        #expect(events.of(.approvalRequested).count == 1)
        #expect(approval.data["id"] == "ws-1~thr_1~0~cmd~turn_1~it_c1")
        #expect(approval.turn == "turn_1")
        #expect(approval.data["kind"] == "command")
        #expect(approval.data["command"] == "npm test")
        #expect(approval.data["cwd"] == "/srv/demo")
        #expect(approval.data["reason"] == "needs network")
        #expect(approval.data["options"] == ["accept", "accept_for_session", "accept_with_amendment", "decline", "cancel"])
        #expect(approval.data["proposed_amendment"] == ["npm", "test"])
        #expect(approval.data["request_id"] == 0)
        #expect(approval.data["item"] == "it_c1")
        #expect(approval.data["risk"] == "low")

        let resolved = try #require(events.of(.approvalResolved).first)
        #expect(resolved.data["id"] == "ws-1~thr_1~0~cmd~turn_1~it_c1")
        #expect(mapper.pendingApprovals.isEmpty)

        let usage = try #require(events.of(.usageUpdated).first)
        #expect(usage.data["input_tokens"] == 1000)
        #expect(usage.data["output_tokens"] == 200)
        #expect(usage.data["cache_read_tokens"] == 0)
        #expect(usage.data["context_window"] == 272000)

        let done = try #require(events.last { $0.type == .turnCompleted })
        #expect(done.turn == "turn_1")
        #expect(done.data["status"] == "completed")
        #expect(done.data["usage"]?["input_tokens"] == 1000)
        #expect(events.of(.turnCompleted).count == 1)
        #expect(mapper.openSessions.isEmpty)
    }

    @Test func fileChangeApprovalCarriesTheChangesAndTheDiffCompletesWithTheTurn() throws {
        var mapper = CodexAppServerMapper()
        let events = try Transcript.map("file-change-approval", into: &mapper)

        let approval = try #require(events.of(.approvalRequested).first)
        #expect(approval.data["id"] == "ws-1~thr_1~1~file~turn_3~it_f1")
        #expect(approval.data["kind"] == "file_change")
        #expect(approval.data["title"] == "Change a.txt")
        #expect(approval.data["changes"] == [["path": "a.txt", "kind": "update", "diff": "@@ -1 +1 @@"]])
        #expect(approval.data["options"] == ["accept", "accept_for_session", "decline", "cancel"])
        #expect(approval.data["risk"] == "medium")
        #expect(events.of(.approvalResolved).map { $0.data["id"] } == ["ws-1~thr_1~1~file~turn_3~it_f1"])

        let file = try #require(events.of(.partCompleted).first { $0.part == "it_f1" })
        #expect(file.data["kind"] == "file_change")
        #expect(file.data["status"] == "completed")
        #expect(file.data["changes"]?[0]?["diff"] == "@@ -1 +1 @@\n-old\n+new")

        // The aggregated diff: one patch part, started once, completed with the last diff.
        let diffPart = "turn_3~diff"
        #expect(events.of(.partStarted).filter { $0.part == diffPart }.count == 1)
        let diff = try #require(events.of(.partCompleted).first { $0.part == diffPart })
        #expect(diff.data["kind"] == "patch")
        #expect(diff.data["files"] == ["a.txt"])
        #expect(diff.data["diff"]?.string?.contains("+newer") == true)

        let plan = try #require(events.of(.planUpdated).first)
        #expect(plan.data["explanation"] == "edit then test")
        #expect(plan.data["steps"] == [["step": "Edit a.txt", "status": "completed"], ["step": "Run tests", "status": "in_progress"],
                                       ["step": "Report", "status": "pending"]])
        #expect(events.last?.type == .sessionStatus)
        #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "completed")
    }

    @Test func aDeclinedCommandResolvesItsApprovalFromTheItemWhenNoResolvedNoticeComes() throws {
        var mapper = CodexAppServerMapper()
        let events = try Transcript.map("declined-command", into: &mapper)

        let approval = try #require(events.of(.approvalRequested).first)
        // A string request id keeps its type: "s:" in the id, a string on the wire.
        #expect(approval.data["id"] == "ws-1~thr_1~s:req-7~cmd~turn_4~it_c4")
        #expect(approval.data["request_id"] == "req-7")
        #expect(approval.data["risk"] == "high")
        // availableDecisions present: what is listed, plus what codex 0.163 takes unlisted
        // (acceptForSession, decline — this very command was declined).
        #expect(approval.data["options"] == ["accept", "accept_for_session", "accept_with_amendment", "decline", "cancel"])

        #expect(events.of(.approvalResolved).map { $0.data["decision"] } == ["decline"])
        #expect(events.of(.partCompleted).first { $0.part == "it_c4" }?.data["status"] == "declined")
        #expect(events.of(.partCompleted).first { $0.part == "it_a4" }?.data["text"] == "OK, I left build/ alone.")
        #expect(events.statuses == ["busy", "waiting_approval", "busy", "idle"])
        #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "completed")
    }

    // MARK: Bounds

    /// The rules at a size a test builds in no time (the defaults are 8 and 16 MiB).
    static let smallLimits = CodexAppServerMapper.TextLimits(perItem: 1000, overAll: 2000)

    /// An app-server message as the daemon wraps it.
    static func appServer(_ method: String, _ params: JSONValue) -> (method: String, params: JSONValue) {
        ("app-server-event", ["workspace_id": "ws-1", "message": ["method": .string(method), "params": params]])
    }

    static func agentDelta(_ item: String, _ text: String) -> (method: String, params: JSONValue) {
        appServer("item/agentMessage/delta", ["threadId": "thr_1", "turnId": "turn_1", "itemId": .string(item), "delta": .string(text)])
    }

    static func map(_ notifications: [(method: String, params: JSONValue)], into mapper: inout CodexAppServerMapper) -> [Event] {
        notifications.flatMap { mapper.map(method: $0.method, params: $0.params) }
    }

    /// Once a piece does not fit an item's limit, later ones are not kept either: an item that
    /// completes with its turn (no item/completed) carries a clean prefix of its text.
    @Test func textCutAtTheLimitHasNoHole() {
        var mapper = CodexAppServerMapper(textLimits: Self.smallLimits)
        let almost = String(repeating: "a", count: Self.smallLimits.perItem - 2)
        let events = Self.map([Self.agentDelta("it_1", almost), Self.agentDelta("it_1", "XYZ"), Self.agentDelta("it_1", "b"),
                               Self.appServer("turn/completed", ["threadId": "thr_1", "turn": ["id": "turn_1", "status": "completed"]])],
                              into: &mapper)
        #expect(events.of(.partDelta).count == 3)  // every delta still streams
        #expect(mapper.textNotAssembled == 2)
        #expect(events.of(.partCompleted).first?.data["text"]?.string == almost)
    }

    /// The text kept over all open items is bounded too, and a completed item gives back its room.
    @Test func textKeptOverAllOpenItemsIsBounded() {
        var mapper = CodexAppServerMapper(textLimits: Self.smallLimits)
        let full = String(repeating: "a", count: Self.smallLimits.perItem)
        let items = Self.smallLimits.overAll / Self.smallLimits.perItem
        _ = Self.map((0...items).map { Self.agentDelta("it_\($0)", full) }, into: &mapper)
        #expect(mapper.textNotAssembled == 1)
        _ = Self.map([Self.appServer("item/completed", ["threadId": "thr_1", "turnId": "turn_1",
                                                        "item": ["type": "agentMessage", "id": "it_0", "text": .string(full)]])],
                     into: &mapper)
        _ = Self.map([Self.agentDelta("it_next", full)], into: &mapper)
        #expect(mapper.textNotAssembled == 1)
    }

    @Test func anInterruptedTurnEndsCancelledAndCompletesWhatWasOpen() throws {
        var mapper = CodexAppServerMapper()
        let events = try Transcript.map("interrupted", into: &mapper)

        let done = try #require(events.last { $0.type == .turnCompleted })
        #expect(done.data["status"] == "cancelled")
        #expect(done.data["error"] == nil)
        // The parts that never got item/completed complete once, from what was streamed.
        let completed = events.of(.partCompleted)
        #expect(completed.map(\.part) == ["it_a1", "it_c1"])
        #expect(completed[0].data["text"] == "Running ")
        #expect(completed[1].data["output"] == "zzz\n")
        #expect(completed[1].data["status"] == "failed")
        // The pending approval died with the turn: dropped, not resolved.
        #expect(events.of(.approvalResolved).isEmpty)
        #expect(mapper.pendingApprovals.isEmpty)
        #expect(events.last?.data["status"] == "idle")
    }

    @Test func errorsSayWhetherCodexRetriesAndAFailedTurnCarriesItsError() throws {
        var mapper = CodexAppServerMapper()
        let events = try Transcript.map("failed-turn", into: &mapper)

        let errors = events.of(.error)
        #expect(errors.count == 2)
        #expect(errors[0].data["retryable"] == true)
        #expect(errors[0].data["message"] == "Codex: stream disconnected before completion")
        #expect(errors[0].data["codex_error_info"]?["responseStreamDisconnected"]?["httpStatusCode"] == 502)
        #expect(errors[1].data["retryable"] == false)
        #expect(errors[1].data["code"] == "failed")
        #expect(errors[1].data["codex_error_info"] == "usageLimitExceeded")
        #expect(errors.allSatisfy { $0.session == session && $0.turn == "turn_2" })

        let retrying = try #require(events.of(.sessionStatus).first { $0.data["status"] == "retrying" })
        #expect(retrying.data["message"] == "stream disconnected before completion")

        let done = try #require(events.last { $0.type == .turnCompleted })
        #expect(done.data["status"] == "failed")
        #expect(done.data["error"] == "Usage limit reached")
        // codex/stderr and account/rateLimits/updated are not domain events.
        #expect(events.count == events.filter { [.turnStarted, .sessionStatus, .error, .turnCompleted].contains($0.type) }.count)
    }

    @Test func permissionAndQuestionRequestsAreShownButOfferNoDecision() throws {
        var mapper = CodexAppServerMapper()
        let events = try Transcript.map("other-requests", into: &mapper)
        let approvals = events.of(.approvalRequested)
        #expect(approvals.map { $0.data["kind"] } == ["permission", "question"])
        #expect(approvals.map { $0.data["id"] } == ["ws-1~thr_1~3~perm~turn_5~it_p5", "ws-1~thr_1~4~input~turn_5~it_q5"])
        #expect(approvals[0].data["permissions"]?["network"]?["enabled"] == true)
        #expect(approvals[1].data["title"] == "Which branch should I use?")
        #expect(approvals.allSatisfy { $0.data["options"] == [] })
        // item/tool/call is not something Tether answers: nothing.
        #expect(mapper.pendingApprovals.count == 2)

        let output = try #require(events.of(.terminalOutput).first)
        #expect(output.data == ["workspace": "ws-1", "terminal": "t1", "data": "$ ls\n"])
        #expect(events.of(.terminalExit).first?.data == ["workspace": "ws-1", "terminal": "t1"])
    }

    @Test func aReannouncedRequestIsNotRepeatedAndANewAppServerForgetsOldOnes() {
        var mapper = CodexAppServerMapper()
        let request = json(#"{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"thr_1","turnId":"turn_1","itemId":"it_c1","command":"ls"}}"#)
        #expect(mapper.map(scope: "ws-1", message: request).of(.approvalRequested).count == 1)
        #expect(mapper.map(scope: "ws-1", message: request).isEmpty)
        // The same request id elsewhere is another request.
        #expect(mapper.map(scope: "ws-2", message: request).of(.approvalRequested).first?.data["id"] == "ws-2~thr_1~0~cmd~turn_1~it_c1")
        // The string "0" is not the number 0.
        let stringID = json(#"{"id":"0","method":"item/commandExecution/requestApproval","params":{"threadId":"thr_1","turnId":"turn_1","itemId":"it_c2","command":"ls"}}"#)
        #expect(mapper.map(scope: "ws-1", message: stringID).of(.approvalRequested).first?.data["id"] == "ws-1~thr_1~s:0~cmd~turn_1~it_c2")
        #expect(mapper.approvals(session: "ws-1~thr_1").count == 2)

        let replaced = mapper.map(scope: "ws-1", message: json(#"{"method":"codex/connected","params":{"workspaceId":"ws-1"}}"#))
        #expect(mapper.approvals().map(\.id) == ["ws-2~thr_1~0~cmd~turn_1~it_c1"])
        // Consumers are told: those requests died with their app-server. Its turns are not ended
        // here (a resync asks Codex which died): the stream machine's test covers that.
        #expect(replaced.of(.turnCompleted).isEmpty)
        #expect(mapper.hasOpenTurns(inScope: "ws-1") && mapper.hasOpenTurns(inScope: "ws-2"))
        #expect(!mapper.hasOpenTurns(inScope: "ws-3"))
        #expect(replaced.of(.approvalResolved).map { $0.data } == [
            ["id": "ws-1~thr_1~0~cmd~turn_1~it_c1", "decision": "unknown"], ["id": "ws-1~thr_1~s:0~cmd~turn_1~it_c2", "decision": "unknown"],
        ])
        // The new app-server numbers its requests from 0 again: another turn, another approval.
        let reused = json(#"{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"thr_1","turnId":"turn_2","itemId":"it_c9","command":"rm -rf build"}}"#)
        let again = mapper.map(scope: "ws-1", message: reused).of(.approvalRequested)
        #expect(again.map { $0.data["id"] } == ["ws-1~thr_1~0~cmd~turn_2~it_c9"])
        #expect(again.first?.data["command"] == "rm -rf build")
    }

    // MARK: Re-reading threads

    static let resumedRunning = #"""
    {"id":"thr_1","preview":"run the tests","cwd":"/srv/demo","createdAt":1767000200,"updatedAt":1767000300,"status":{"type":"active","activeFlags":["waitingOnApproval"]},
     "turns":[
      {"id":"turn_0","status":"completed","error":null,"items":[{"type":"userMessage","id":"it_u0","content":[{"type":"text","text":"hi"}]},{"type":"agentMessage","id":"it_a0","text":"Hello."}]},
      {"id":"turn_1","status":"inProgress","error":null,"items":[
        {"type":"userMessage","id":"it_u1","content":[{"type":"text","text":"run the tests"}]},
        {"type":"agentMessage","id":"it_a1","text":"I'll run the tests."},
        {"type":"commandExecution","id":"it_c1","command":"npm test","cwd":"/srv/demo","status":"inProgress","commandActions":[]}]}]}
    """#

    @Test func aFirstReadShowsTheRunningTurnWithoutReplayingHistory() {
        var mapper = CodexAppServerMapper()
        let events = mapper.reconcile(scope: "ws-1", thread: json(Self.resumedRunning))
        #expect(events.of(.turnStarted).map(\.turn) == ["turn_1"])
        #expect(events.of(.partCompleted).map(\.part) == ["it_u1", "it_a1"])
        #expect(events.of(.partStarted).map(\.part) == ["it_c1"])
        #expect(events.of(.turnCompleted).isEmpty)
        #expect(events.statuses == ["busy", "waiting_approval"])
        #expect(mapper.openSessions == [session])
        // A second read of the same state says nothing new.
        #expect(mapper.reconcile(scope: "ws-1", thread: json(Self.resumedRunning)).isEmpty)
    }

    @Test func aReadAfterReconnectEmitsOnlyWhatTheStreamMissed() throws {
        let all = try Transcript.notifications("streaming-turn")
        var reference = CodexAppServerMapper()
        let expected = all.flatMap { reference.map(method: $0.method, params: $0.params) }

        // Live up to the approval request, then the link drops; meanwhile the turn finishes.
        var mapper = CodexAppServerMapper()
        var events = all.prefix(9).flatMap { mapper.map(method: $0.method, params: $0.params) }
        let finished = json(#"""
        {"id":"thr_1","status":{"type":"idle"},"turns":[{"id":"turn_1","status":"completed","error":null,"items":[
          {"type":"userMessage","id":"it_u1","content":[{"type":"text","text":"run the tests"}]},
          {"type":"agentMessage","id":"it_a1","text":"I'll run the tests."},
          {"type":"commandExecution","id":"it_c1","command":"npm test","cwd":"/srv/demo","status":"completed","commandActions":[],"aggregatedOutput":"3 passing\n","exitCode":0,"durationMs":812}]}]}
        """#)
        events += mapper.reconcile(scope: "ws-1", thread: finished)
        // Then, say, the daemon delivers the rest late: all of it is old news but usage.
        events += all.dropFirst(9).flatMap { mapper.map(method: $0.method, params: $0.params) }

        for type in [EventType.partCompleted, .turnStarted, .turnCompleted, .approvalRequested] {
            let identities = events.of(type).identities
            #expect(Set(identities).count == identities.count, "no \(type.rawValue) twice")
        }
        #expect(events.of(.partCompleted).map(\.part) == expected.of(.partCompleted).map(\.part))
        #expect(events.of(.partCompleted).last?.data["output"] == "3 passing\n")
        #expect(events.of(.turnCompleted).map(\.turn) == ["turn_1"])
        #expect(events.of(.approvalRequested).count == 1)
        // The approval was answered while we were away: its item completed, so it is resolved.
        #expect(events.of(.approvalResolved).map { $0.data["decision"] } == ["accept"])
        #expect(mapper.pendingApprovals.isEmpty)
    }

    @Test func aReadAfterReconnectPicksUpTurnsThatStartedAndEndedMeanwhile() {
        var mapper = CodexAppServerMapper()
        _ = mapper.reconcile(scope: "ws-1", thread: json(Self.resumedRunning))
        let later = json(#"""
        {"id":"thr_1","status":{"type":"idle"},"turns":[
          {"id":"turn_0","status":"completed","items":[{"type":"agentMessage","id":"it_a0","text":"Hello."}]},
          {"id":"turn_1","status":"completed","items":[{"type":"agentMessage","id":"it_a1","text":"I'll run the tests."},{"type":"commandExecution","id":"it_c1","command":"npm test","status":"completed","aggregatedOutput":"ok"}]},
          {"id":"turn_2","status":"failed","error":{"message":"boom"},"items":[{"type":"userMessage","id":"it_u2","content":[{"type":"text","text":"again"}]}]}]}
        """#)
        let events = mapper.reconcile(scope: "ws-1", thread: later)
        #expect(events.of(.turnStarted).map(\.turn) == ["turn_2"])
        #expect(events.of(.partCompleted).map(\.part) == ["it_c1", "it_u2"])
        #expect(events.of(.turnCompleted).map { "\($0.turn!):\($0.data["status"]!.string!)" } == ["turn_1:completed", "turn_2:failed"])
        #expect(events.of(.turnCompleted).last?.data["error"] == "boom")
        #expect(events.last?.data["status"] == "idle")
    }

    @Test func historyReplaysEveryTurnAndHonoursTheLimit() {
        let events = CodexAppServerMapper.history(scope: "ws-1", thread: json(Self.resumedRunning), limit: nil)
        #expect(events.of(.turnStarted).map(\.turn) == ["turn_0", "turn_1"])
        #expect(events.of(.partCompleted).map(\.part) == ["it_u0", "it_a0", "it_u1", "it_a1", "it_c1"])
        #expect(events.of(.turnCompleted).map(\.turn) == ["turn_0"])
        #expect(events.of(.sessionStatus).isEmpty)
        #expect(events.allSatisfy { $0.session == session })

        let last = CodexAppServerMapper.history(scope: "ws-1", thread: json(Self.resumedRunning), limit: 1)
        #expect(Set(last.compactMap(\.turn)) == ["turn_1"])
    }

    @Test func threadLifecycleNotificationsBecomeSessionEvents() {
        var mapper = CodexAppServerMapper()
        let started = mapper.map(scope: "ws-1", message: json(#"{"method":"thread/started","params":{"thread":{"id":"thr_9","preview":"","cwd":"/srv/demo","createdAt":1767000200,"updatedAt":1767000200,"status":{"type":"idle"},"turns":[]}}}"#))
        #expect(started.map(\.type) == [.sessionCreated])
        #expect(started.first?.session == "ws-1~thr_9")
        #expect(started.first?.data["created_at"] == .double(1_767_000_200_000))
        #expect(started.first?.data["directory"] == "/srv/demo")
        let renamed = mapper.map(scope: "ws-1", message: json(#"{"method":"thread/name/updated","params":{"threadId":"thr_9","threadName":"Fix CI"}}"#))
        #expect(renamed.first?.data["title"] == "Fix CI")
        let status = mapper.map(scope: "ws-1", message: json(#"{"method":"thread/status/changed","params":{"threadId":"thr_9","status":{"type":"active","activeFlags":[]}}}"#))
        #expect(status.statuses == ["busy"])
        #expect(mapper.map(scope: "ws-1", message: json(#"{"method":"thread/status/changed","params":{"threadId":"thr_9","status":{"type":"active"}}}"#)).isEmpty)
    }
}
