import TetherCodexProtocol
import Foundation
import Testing
import TetherCore
@testable import TetherCodexMonitor
import TetherStreaming

/// The CodexMonitor stream's rules without a socket: recorded notifications and `resume_thread`
/// snapshots in, actions out.
@Suite struct CodexMonitorStreamMachineTests {
    typealias Machine = CodexMonitorStreamMachine

    func machine(_ request: EventsRequest = EventsRequest(follow: true), target: (String, String)? = nil,
                 filtersWorkspaces: Bool = false, prompt: Bool = false, keepalive: Duration = .seconds(30),
                 mapper: CodexAppServerMapper = CodexAppServerMapper()) -> Machine {
        Machine(request: request, configuration: .init(target: target.map { (workspace: $0.0, thread: $0.1) },
                                                       filtersWorkspaces: filtersWorkspaces, keepalive: keepalive,
                                                       endpoint: "127.0.0.1:4732", hasPrompt: prompt),
                mapper: mapper)
    }

    /// A `resume_thread` answer recorded beside the transcripts (`Transcripts/NAME.json`: the
    /// daemon's whole response line), unwrapped as the backend unwraps it: its `thread`.
    static func resumed(_ name: String) throws -> JSONValue {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Transcripts"))
        let line = try JSONParser.parse(String(contentsOf: url, encoding: .utf8))
        guard case .response(_, .success(let result)) = CodexMonitorRPC.Message.classify(line) else {
            throw Transcript.Missing(name: "\(name): not a response")
        }
        return try #require(try CodexMonitorResult.unwrap(result).get()["thread"])
    }

    static func snapshot(_ threads: [JSONValue], watched: [String] = ["ws-1"],
                         missing: [(gap: Machine.Gap, error: TetherError)] = []) -> CodexMonitorSnapshot {
        CodexMonitorSnapshot(watched: watched, threads: threads.map { (workspace: "ws-1", thread: $0) }, missing: missing)
    }

    /// Feeds notifications, as the RPC layer hands them over, and returns the actions.
    static func receive(_ notifications: some Sequence<(method: String, params: JSONValue)>, into machine: inout Machine,
                        at time: Double = 1000) -> [Machine.Action] {
        notifications.flatMap { machine.receive(method: $0.method, params: $0.params, raw: ["method": .string($0.method)], at: time) }
    }

    // MARK: Resync

    @Test func aReconnectResyncsAndEmitsOnlyWhatTheStreamMissed() throws {
        let all = try Transcript.notifications("streaming-turn")
        var machine = machine()
        #expect(machine.connecting(attempt: 1, at: 0).emitted.map { $0.data["state"] } == ["connecting"])
        let connected = machine.connected(at: 1)
        #expect(connected.emitted.map { $0.data["state"] } == ["connected"])
        #expect(connected.last == .resync)
        // Nothing open yet: the first resync reads what list_threads says is active.
        #expect(machine.listsActiveThreads)
        #expect(machine.threadsToRead(active: []).isEmpty)
        #expect(machine.resynced(Self.snapshot([]), at: 2).isEmpty)

        // Live up to the approval request; then the link drops while the turn finishes.
        var events = Self.receive(all.prefix(9), into: &machine).emitted
        #expect(events.of(.approvalRequested).count == 1)
        let down = machine.disconnected(reason: "the daemon closed the connection", retryIn: .seconds(1), attempt: 2, at: 3)
        #expect(down.emitted.map { $0.data["state"] } == ["reconnecting"])
        #expect(down.emitted.first?.data["reason"]?.string?.contains("retrying in 1.0 s") == true)
        #expect(machine.connected(at: 4).last == .resync)
        // The turn held open is re-read even though no list names it, and only once.
        #expect(machine.threadsToRead(active: [(workspace: "ws-1", thread: "thr_1")]).map(\.thread) == ["thr_1"])
        let resynced = machine.resynced(Self.snapshot([try Self.resumed("streaming-turn.resume-thread")]), at: 5)
        events += resynced.emitted
        // What the link missed, stamped with the resync's time, and the turn that came before
        // ours (turn_0) is not replayed.
        #expect(resynced.emitted.allSatisfy { $0.ts == 5 && $0.turn != "turn_0" })
        #expect(resynced.emitted.of(.partCompleted).map(\.part) == ["it_c1"])
        #expect(resynced.emitted.of(.turnCompleted).map(\.turn) == ["turn_1"])
        // The rest arrives late after all: old news, nothing twice.
        events += Self.receive(all.dropFirst(9), into: &machine).emitted
        for type in [EventType.partCompleted, .turnStarted, .turnCompleted, .approvalRequested, .approvalResolved] {
            let identities = events.of(type).identities
            #expect(Set(identities).count == identities.count, "no \(type.rawValue) twice")
        }
        #expect(events.of(.partCompleted).map(\.part) == ["it_u1", "it_a1", "it_c1"])
        #expect(events.of(.approvalResolved).map { $0.data["decision"] } == ["accept"])
        // A second read of the same state says nothing new.
        #expect(machine.resynced(Self.snapshot([try Self.resumed("streaming-turn.resume-thread")]), at: 6).emitted.isEmpty)
    }

    /// Codex's app-server restarted: the turn held open died with it and will never say so. Its
    /// approval goes at once; the turn ends when a re-read shows it `interrupted` (codex-cli
    /// 0.163.0 reads a dead turn back so), not before: a turn just started in the new process
    /// may also be open.
    @Test func aNewAppServerResolvesTheOldRequestsAndRereadsTheTurnsHeldOpen() throws {
        let all = try Transcript.notifications("streaming-turn")
        var machine = machine()
        _ = machine.connected(at: 1)
        _ = machine.resynced(Self.snapshot([]), at: 2)
        #expect(Self.receive(all.prefix(9), into: &machine).emitted.of(.approvalRequested).count == 1)

        let connected = json(#"{"workspace_id":"ws-1","message":{"method":"codex/connected","params":{"workspaceId":"ws-1"}}}"#)
        let actions = machine.receive(method: "app-server-event", params: connected, raw: .null, at: 3)
        #expect(actions.emitted.map { "\($0.type.rawValue) \($0.data["decision"]?.string ?? "")" } == ["approval.resolved unknown", "session.status "])
        #expect(actions.last == .resync)
        #expect(machine.threadsToRead(active: []).map(\.thread) == ["thr_1"])
        let dead = json(#"{"id":"thr_1","status":{"type":"idle"},"turns":[{"id":"turn_1","status":"interrupted","items":[]}]}"#)
        let reread = machine.resynced(Self.snapshot([dead]), at: 4).emitted
        #expect(reread.of(.turnCompleted).map { $0.data["status"] } == ["cancelled"])
        // Nothing held open: the next new app-server needs no re-read.
        #expect(machine.receive(method: "app-server-event", params: connected, raw: .null, at: 5).last != .resync)
    }

    @Test func droppedNotificationsAreSaidAndResynced() {
        var machine = machine()
        #expect(machine.lost(count: 7, at: 10) == [.note(.dropped(count: 7)), .resync])
    }

    @Test func aSessionAskedForIsReadFirstAndListsAreNotNeeded() throws {
        var machine = machine(EventsRequest(session: "ws-1~thr_1", follow: true), target: ("ws-1", "thr_1"))
        #expect(!machine.listsActiveThreads)
        #expect(machine.threadsToRead(active: [(workspace: "ws-1", thread: "thr_9")]).map(\.thread) == ["thr_1"])
        #expect(machine.isTarget(workspace: "ws-1", thread: "thr_1"))
        #expect(!machine.isTarget(workspace: "ws-1", thread: "thr_9"))
        _ = machine.resynced(Self.snapshot([]), at: 1)
        // Only that session's events pass, by its full WORKSPACE~THREAD id.
        let other = #"{"workspace_id":"ws-1","message":{"method":"turn/started","params":{"threadId":"thr_9","turn":{"id":"turn_9","items":[],"status":"inProgress"}}}}"#
        #expect(machine.receive(method: "app-server-event", params: json(other), raw: .null, at: 2).emitted.isEmpty)
        let ours = try Transcript.notifications("streaming-turn")
        let kept = Self.receive(ours.prefix(1), into: &machine).emitted
        #expect(kept.map(\.type) == [.turnStarted, .sessionStatus])
        #expect(kept.allSatisfy { $0.session == "ws-1~thr_1" })
    }

    @Test func aProfileWorkspaceKeepsOtherWorkspacesOut() throws {
        var machine = machine(filtersWorkspaces: true)
        _ = machine.resynced(Self.snapshot([], watched: ["ws-1"]), at: 1)
        let started = #"{"method":"turn/started","params":{"threadId":"thr_1","turn":{"id":"turn_1","items":[],"status":"inProgress"}}}"#
        let elsewhere = machine.receive(method: "app-server-event", params: json(#"{"workspace_id":"ws-2","message":\#(started)}"#), raw: .null, at: 2)
        #expect(elsewhere.emitted.isEmpty)
        let here = machine.receive(method: "app-server-event", params: json(#"{"workspace_id":"ws-1","message":\#(started)}"#), raw: .null, at: 3)
        #expect(here.emitted.map(\.type) == [.turnStarted, .sessionStatus])
        #expect(here.emitted.first?.ts == 3)
        // Not events at all: said at -v, nothing emitted.
        #expect(machine.receive(method: "daemon/heartbeat", params: .null, raw: .null, at: 4) == [.note(.ignored(method: "daemon/heartbeat"))])
        let stderr = machine.receive(method: "app-server-event", params: json(#"{"workspace_id":"ws-1","message":{"method":"codex/stderr","params":{"message":"warn"}}}"#), raw: .null, at: 5)
        #expect(stderr == [.note(.codexStderr(workspace: "ws-1", line: "warn"))])
    }

    // MARK: Pings

    /// A bound reached — items open past the limit, text past an item's limit — is said once
    /// on stderr, whichever comes first, and never again in the run.
    @Test(arguments: [true, false]) func aBoundReachedIsSaidOnce(byItems: Bool) {
        let limits = CodexAppServerMapperTests.smallLimits
        var machine = machine(mapper: CodexAppServerMapper(textLimits: limits))
        func delta(_ item: String, _ text: String) -> (method: String, params: JSONValue) {
            CodexAppServerMapperTests.agentDelta(item, text)
        }
        let big = String(repeating: "a", count: limits.perItem)
        let first = byItems ? (0...1024).map { delta("it_\($0)", "x") } : [delta("it_a", big), delta("it_a", "more")]
        let notes = Self.receive(first + (0..<4).map { delta("it_big\($0)", big + "b") }, into: &machine)
            .filter { if case .note(.boundReached) = $0 { return true } else { return false } }
        #expect(notes.count == 1)
        guard case .note(.boundReached(let text))? = notes.first else { return }
        #expect(text.contains("1000 bytes of text or output an item") && text.contains("2000 bytes in all"))
    }

    @Test func aSilentLinkIsPingedAfterKeepaliveAndOnlyThen() {
        var machine = machine(keepalive: .seconds(30))
        _ = machine.connected(at: 0)
        #expect(machine.timeUntilTick(at: 1_000) == .seconds(29))
        #expect(machine.tick(at: 29_999).isEmpty)
        // A notification is life: the silence starts over.
        _ = machine.receive(method: "terminal-exit", params: json(#"{"workspaceId":"ws-1","terminalId":"t1"}"#), raw: .null, at: 20_000)
        #expect(machine.tick(at: 30_000).isEmpty)
        #expect(machine.timeUntilTick(at: 30_000) == .seconds(20))
        #expect(machine.tick(at: 50_000) == [.ping])
        // The ping counts as activity: not again at once.
        #expect(machine.tick(at: 50_001).isEmpty)
        #expect(machine.tick(at: 80_000) == [.ping])
        #expect(machine.timeUntilTick(at: 200_000) == .zero)
    }

    // MARK: send --follow

    @Test func sendFollowPostsOnceResyncedAndFinishesOnItsTurn() throws {
        let request = EventsRequest(session: "ws-1~thr_1", follow: true, untilTurnCompletes: true)
        var machine = machine(request, target: ("ws-1", "thr_1"), prompt: true)
        _ = machine.connecting(attempt: 1, at: 0)
        #expect(machine.connected(at: 1).last == .resync)
        // The thread's earlier turn is not ours: nothing of it goes out, then the prompt is sent.
        let resynced = machine.resynced(Self.snapshot([try Self.resumed("idle-thread.resume-thread")]), at: 2)
        #expect(resynced.emitted.allSatisfy { $0.type == .connectionState || $0.type == .sessionStatus })
        #expect(resynced.last == .postPrompt)
        machine.postingPrompt()
        // Another thread's turn, then ours: turn/started beats send_user_message's answer.
        let noise = #"{"workspace_id":"ws-1","message":{"method":"turn/started","params":{"threadId":"thr_9","turn":{"id":"turn_9","items":[],"status":"inProgress"}}}}"#
        #expect(machine.receive(method: "app-server-event", params: json(noise), raw: .null, at: 3).emitted.isEmpty)
        let all = try Transcript.notifications("streaming-turn")
        var actions = Self.receive(all.prefix(1), into: &machine)
        actions += machine.promptSent(turn: "turn_1", at: 4)
        actions += Self.receive(all.dropFirst(), into: &machine)
        let events = actions.emitted
        #expect(events.first?.type == .turnStarted)
        #expect(events.of(.turnStarted).count == 1)
        #expect(events.allSatisfy { $0.session == "ws-1~thr_1" && ($0.turn == "turn_1" || $0.type == .sessionStatus) })
        #expect(events.last?.type == .turnCompleted)
        #expect(actions.last == .finish)
        #expect(actions.filter { $0 == .finish }.count == 1)
        #expect(machine.isDone)
        // Done: a reconnect would not send again, and nothing more goes out.
        #expect(!machine.resynced(Self.snapshot([try Self.resumed("streaming-turn.resume-thread")]), at: 9).contains(.postPrompt))
        #expect(Self.receive(all, into: &machine).emitted.isEmpty)
    }

    @Test func aPromptIsNeverSentTwiceEvenWhenTheLinkDropsBeforeItsAnswer() throws {
        let request = EventsRequest(session: "ws-1~thr_1", follow: true, untilTurnCompletes: true)
        var machine = machine(request, target: ("ws-1", "thr_1"), prompt: true)
        _ = machine.connected(at: 1)
        #expect(machine.resynced(Self.snapshot([]), at: 2).last == .postPrompt)
        machine.postingPrompt()  // and the connection drops before send_user_message answers
        _ = machine.disconnected(reason: "reset", retryIn: .seconds(1), attempt: 2, at: 3)
        _ = machine.connected(at: 4)
        // The turn started anyway: the resync finds it, and it is ours.
        let running = json(#"{"id":"thr_1","status":{"type":"active"},"turns":[{"id":"turn_1","status":"inProgress","items":[]}]}"#)
        let resynced = machine.resynced(Self.snapshot([running]), at: 5)
        #expect(!resynced.contains(.postPrompt))
        #expect(resynced.emitted.of(.turnStarted).map(\.turn) == ["turn_1"])
    }

    /// The daemon named the turn, then the link dropped before any of it streamed, and it ended
    /// meanwhile: the resync after the reconnect completes it, and `send --follow` finishes.
    @Test func aTurnNamedBySendThatEndsWhileTheLinkIsDownStillFinishes() throws {
        let request = EventsRequest(session: "ws-1~thr_1", follow: true, untilTurnCompletes: true)
        var machine = machine(request, target: ("ws-1", "thr_1"), prompt: true)
        _ = machine.connected(at: 1)
        _ = machine.resynced(Self.snapshot([try Self.resumed("idle-thread.resume-thread")]), at: 2)
        machine.postingPrompt()
        let sent = machine.promptSent(turn: "turn_1", at: 3)
        #expect(sent.emitted.map(\.type) == [.turnStarted, .sessionStatus])
        _ = machine.disconnected(reason: "reset", retryIn: .seconds(1), attempt: 2, at: 4)
        _ = machine.connected(at: 5)
        #expect(machine.threadsToRead(active: []).map(\.thread) == ["thr_1"])
        let resynced = machine.resynced(Self.snapshot([try Self.resumed("streaming-turn.resume-thread")]), at: 6)
        #expect(resynced.emitted.of(.partCompleted).map(\.part) == ["it_u1", "it_a1", "it_c1"])
        #expect(resynced.emitted.of(.turnCompleted).map(\.turn) == ["turn_1"])
        #expect(resynced.last == .finish)
    }

    /// The link dropped while the prompt was being sent, so the daemon's answer (the turn's id)
    /// was lost, and the turn ran and ended before Tether was back (the fault suite's restarts
    /// caught this: `send --follow` then waited forever). The resync finds a turn of the thread
    /// that was not there before the prompt: it is ours, read whole, and the run finishes.
    @Test func aTurnWhoseSendAnswerWasLostAndThatEndedWhileTheLinkWasDownStillFinishes() throws {
        let request = EventsRequest(session: "ws-1~thr_1", follow: true, untilTurnCompletes: true)
        var machine = machine(request, target: ("ws-1", "thr_1"), prompt: true)
        _ = machine.connected(at: 1)
        #expect(machine.resynced(Self.snapshot([try Self.resumed("idle-thread.resume-thread")]), at: 2).last == .postPrompt)
        machine.postingPrompt()  // and the link drops before send_user_message answers
        _ = machine.disconnected(reason: "reset", retryIn: .seconds(1), attempt: 2, at: 3)
        _ = machine.connected(at: 4)
        let resynced = machine.resynced(Self.snapshot([try Self.resumed("streaming-turn.resume-thread")]), at: 5)
        #expect(!resynced.contains(.postPrompt))
        let events = resynced.emitted
        #expect(events.of(.turnStarted).map(\.turn) == ["turn_1"])  // not turn_0: it was there before the prompt
        #expect(events.of(.partCompleted).map(\.part) == ["it_u1", "it_a1", "it_c1"])
        #expect(events.of(.turnCompleted).map(\.turn) == ["turn_1"])
        #expect(resynced.last == .finish)
    }

    /// The link dropped before the daemon read the prompt: after the reconnect the thread has
    /// no new turn and is idle, so the prompt is sent again (waiting for it would be forever);
    /// while the thread is busy it is not (that may be the prompt's turn starting).
    @Test func aPromptThatNeverReachedTheDaemonIsSentAgain() throws {
        let request = EventsRequest(session: "ws-1~thr_1", follow: true, untilTurnCompletes: true)
        let idle = try Self.resumed("idle-thread.resume-thread")
        var machine = machine(request, target: ("ws-1", "thr_1"), prompt: true)
        _ = machine.connected(at: 1)
        #expect(machine.resynced(Self.snapshot([idle]), at: 2).last == .postPrompt)
        machine.postingPrompt()
        _ = machine.connected(at: 4)
        var busy = idle
        if case .object(var object) = busy {
            object["status"] = ["type": "active"]
            busy = .object(object)
        }
        #expect(!machine.resynced(Self.snapshot([busy]), at: 5).contains(.postPrompt))
        _ = machine.connected(at: 6)
        #expect(machine.resynced(Self.snapshot([idle]), at: 7).last == .postPrompt)
    }

    /// Without a snapshot of the thread from before the prompt, no turn is taken for ours.
    @Test func noTurnIsAdoptedWithoutKnowingTheThreadBeforeThePrompt() throws {
        let request = EventsRequest(session: "ws-1~thr_1", follow: true, untilTurnCompletes: true)
        var machine = machine(request, target: ("ws-1", "thr_1"), prompt: true)
        _ = machine.connected(at: 1)
        _ = machine.resynced(Self.snapshot([]), at: 2)  // the thread could not be read
        machine.postingPrompt()
        _ = machine.connected(at: 4)
        let resynced = machine.resynced(Self.snapshot([try Self.resumed("streaming-turn.resume-thread")]), at: 5)
        #expect(resynced.emitted.of(.turnCompleted).isEmpty)
        #expect(!machine.isDone)
    }

    // MARK: Gaps

    @Test func aDaemonMissingMethodsIsSaidOncePerGapAndTheStreamGoesOn() throws {
        var machine = machine()
        _ = machine.connected(at: 1)
        let listMissing = TetherError(.unsupported, "the CodexMonitor daemon at 127.0.0.1:4732 does not know list_threads (listing)",
                                      hint: "update CodexMonitor on that machine")
        let first = machine.resynced(Self.snapshot([], missing: [(.listThreads, listMissing)]), at: 2)
        #expect(first.contains(.note(.gap(.listThreads, message: listMissing.message))))
        let error = try #require(first.emitted.of(.error).first)
        #expect(error.session == nil)
        #expect(error.data["retryable"] == false)
        #expect(error.data["message"]?.string?.contains("live events still stream") == true)
        // The same gap on the next resync (after a reconnect) is not said again...
        let again = machine.resynced(Self.snapshot([], missing: [(.listThreads, listMissing)]), at: 3)
        #expect(again.isEmpty)
        // ...another one is, and what could be read is still reconciled.
        let resumeMissing = TetherError(.unsupported, "the CodexMonitor daemon does not know resume_thread", hint: nil)
        let other = machine.resynced(Self.snapshot([try Self.resumed("idle-thread.resume-thread")],
                                                   missing: [(.resumeThread, resumeMissing), (.listThreads, listMissing)]), at: 4)
        #expect(other.filter { if case .note(.gap) = $0 { true } else { false } } == [.note(.gap(.resumeThread, message: resumeMissing.message))])
        #expect(other.emitted.of(.error).count == 1)
        #expect(other.emitted.of(.sessionStatus).map(\.session) == ["ws-1~thr_1"])
    }
}

extension Array where Element == CodexMonitorStreamMachine.Action {
    /// The events of the `.emit` actions, in order.
    var emitted: [Event] {
        flatMap { action -> [Event] in
            if case .emit(let events) = action { return events }
            return []
        }
    }
}
