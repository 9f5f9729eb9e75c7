import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// The real binary, `backend = "codex"`, against the app-server simulator (`tether simulate
/// codex`): over ws:// with a token, over its unix socket, and as a stdio child.
@Suite(.serialized) struct CodexAppServerCLITests {
    let env = ["CODEX_TEST_TOKEN": "cap-token"]

    func withServer(_ options: CodexAppServerSimulator.Options = .init(token: "cap-token"),
                    _ body: (CodexAppServerSimulator, URL, [String]) async throws -> Void) async throws {
        let simulator = CodexAppServerSimulator(options: options)
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.c]
            backend = "codex"
            url = "\(url.absoluteString)"
            token = { env = "CODEX_TEST_TOKEN" }
            directory = "/srv/project"
            """)
        try await body(simulator, url, ["--config", config.path, "-p", "c"])
    }

    /// `send --follow` with `prompt` in a new session; its approval answered from a fresh process
    /// with `decision`; the follower's result.
    func approvalTurn(_ global: [String], prompt: String, decision: [String]) async throws -> TetherProcess.Result {
        let session = try await TetherProcess.createSession(global, environment: env)
        let send = try TetherProcess(["send", session, prompt, "--follow"] + global, environment: env)
        let approval = try await send.waitForEvent(.approvalRequested)
        let id = try #require(approval.data["id"]?.string)
        let approve = try await TetherProcess.run(["approve", id] + decision + global, environment: env)
        #expect(approve.status == 0, "\(approve.stderr)")
        return try await send.finish()
    }

    @Test func aTurnStreamsItsTextAndHistoryReadsItBack() async throws {
        try await withServer { _, _, global in
            let check = try await TetherProcess.run(["check"] + global, environment: env)
            #expect(check.status == 0, "\(check.stderr)")
            let wrong = try await TetherProcess.run(["check"] + global, environment: ["CODEX_TEST_TOKEN": "nope"])
            #expect(wrong.status == 77)
            #expect(wrong.stderr.contains("refused the token"))

            let session = try await TetherProcess.createSession(global, environment: env, title: "sim")
            let sent = try await TetherProcess.run(["send", session, "hello there", "--follow"] + global, environment: env)
            #expect(sent.status == 0, "\(sent.stderr)")
            let events = try sent.events()
            let reply = try #require(events.first { $0.type == .partCompleted && $0.data["role"] == "assistant" })
            #expect(reply.data["text"] == "Fake model reply. You said: hello there")
            let streamed = events.filter { $0.type == .partDelta && $0.part == reply.part }.compactMap { $0.data["delta"]?.string }.joined()
            #expect(streamed == "Fake model reply. You said: hello there")
            #expect(events.filter { $0.type == .turnCompleted }.map { $0.data["status"] } == ["completed"])

            let history = try await TetherProcess.run(["history", session] + global, environment: env)
            #expect(history.status == 0, "\(history.stderr)")
            #expect(try history.events().contains { $0.type == .partCompleted && $0.data["text"] == "Fake model reply. You said: hello there" })
            let listed = try await TetherProcess.run(["sessions", "list"] + global, environment: env)
            #expect(try listed.events().contains { $0.session == session })
        }
    }

    /// `events --follow` (every thread, and one with `--session`) sees a turn another process sends.
    @Test func eventsFollowTurnsSentElsewhere() async throws {
        try await withServer { _, _, global in
            let session = try await TetherProcess.createSession(global, environment: env)
            _ = try await TetherProcess.run(["send", session, "first", "--follow"] + global, environment: env)
            for follow in [["events", "--follow"], ["events", "--session", session, "--follow"]] {
                let watcher = try TetherProcess(follow + global, environment: env)
                _ = try await watcher.waitForLine { $0.contains(#""state":"connected""#) }
                let sent = try await TetherProcess.run(["send", session, "seen elsewhere"] + global, environment: env)
                #expect(sent.status == 0, "\(sent.stderr)")
                let done = try await watcher.waitForEvent(.turnCompleted, timeout: .seconds(30))
                #expect(done.session == session)
                watcher.interrupt()
                let events = try await watcher.finish().events()
                #expect(events.contains { $0.type == .partCompleted && $0.data["text"] == "Fake model reply. You said: seen elsewhere" }, "\(follow)")
            }
        }
    }

    /// A watcher that connected before the thread existed: Codex tells it only that the thread
    /// became active; it resumes the thread and sees the turn.
    @Test func eventsFollowAThreadBornAfterIt() async throws {
        try await withServer { _, _, global in
            let watcher = try TetherProcess(["events", "--follow"] + global, environment: env)
            _ = try await watcher.waitForLine { $0.contains(#""state":"connected""#) }
            let session = try await TetherProcess.createSession(global, environment: env)
            let sent = try await TetherProcess.run(["send", session, "born later", "--follow"] + global, environment: env)
            #expect(sent.status == 0, "\(sent.stderr)")
            let done = try await watcher.waitForEvent(.turnCompleted, timeout: .seconds(30))
            #expect(done.session == session)
            watcher.interrupt()
            let events = try await watcher.finish().events()
            #expect(events.contains { $0.type == .partCompleted && $0.data["text"] == "Fake model reply. You said: born later" })
        }
    }

    /// Every decision, each answered from a process that never saw the request: the request is
    /// asked again when the thread is resumed, and only then answered.
    @Test func everyDecisionFromAFreshProcess() async throws {
        try await withServer { _, _, global in
            let cases: [([String], String, String)] = [
                (["--decision", "accept"], "completed", "completed"),
                (["--decision", "accept_for_session"], "completed", "completed"),
                (["--decision", "accept_with_amendment", "--amendment", "touch", "created_by_codex.txt"], "completed", "completed"),
                (["--decision", "decline"], "completed", "declined"),
                (["--decision", "cancel"], "cancelled", "declined"),
            ]
            for (decision, turn, command) in cases {
                let result = try await approvalTurn(global, prompt: "cmd please", decision: decision)
                let events = try result.events()
                #expect(events.filter { $0.type == .approvalRequested }.count == 1, "\(decision)")
                #expect(events.filter { $0.type == .turnCompleted }.map { $0.data["status"]?.string } == [turn], "\(decision)")
                #expect(events.first { $0.type == .partCompleted && $0.data["kind"] == "command" }?.data["status"]?.string == command, "\(decision)")
            }
        }
    }

    @Test func aFileChangeApprovalCarriesItsDiff() async throws {
        try await withServer { _, _, global in
            let result = try await approvalTurn(global, prompt: "patch it", decision: ["--decision", "accept"])
            let events = try result.events()
            let approval = try #require(events.first { $0.type == .approvalRequested })
            #expect(approval.data["kind"] == "file_change")
            let changes = try #require(approval.data["changes"]?.array)
            #expect(changes.first?["diff"]?.string?.isEmpty == false)
            #expect(events.contains { $0.type == .partStarted && $0.data["kind"] == "patch" })
            #expect(events.filter { $0.type == .turnCompleted }.map { $0.data["status"] } == ["completed"])
        }
    }

    /// Codex asks with `item/tool/requestUserInput`: a question approval, answered by its
    /// choice from a fresh process (`--answer`), or dismissed (`--decision decline`).
    @Test func aQuestionIsAnsweredFromAFreshProcess() async throws {
        try await withServer { _, _, global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let send = try TetherProcess(["send", session, "a question please", "--follow"] + global, environment: env)
            let asked = try await send.waitForEvent(.approvalRequested)
            #expect(asked.data["kind"] == "question")
            #expect(asked.data["questions"]?[0]?["options"]?[1]?["label"] == "right")
            let answered = try await TetherProcess.run(["approve", "last", "--answer", "2"] + global, environment: env)
            #expect(answered.status == 0, "\(answered.stderr)")
            let result = try await send.finish()
            #expect(try result.events().contains { $0.type == .partCompleted && $0.data["text"] == "Fake model reply. You answered: right" })

            let again = try TetherProcess(["send", session, "another question please", "--follow"] + global, environment: env)
            _ = try await again.waitForEvent(.approvalRequested)
            let dismissed = try await TetherProcess.run(["approve", "last", "--decision", "decline"] + global, environment: env)
            #expect(dismissed.status == 0, "\(dismissed.stderr)")
            #expect(try await again.finish().events().contains { $0.type == .partCompleted && $0.data["text"] == "Fake model reply. You answered: " })
        }
    }

    /// An approval answered a second time, or one that never was, is refused without sending.
    @Test func anApprovalNoLongerPendingIsRefused() async throws {
        try await withServer { _, _, global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let send = try TetherProcess(["send", session, "cmd please", "--follow"] + global, environment: env)
            let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)
            let first = try await TetherProcess.run(["approve", id, "--decision", "accept"] + global, environment: env)
            #expect(first.status == 0, "\(first.stderr)")
            _ = try await send.finish()
            let again = try await TetherProcess.run(["approve", id, "--decision", "accept"] + global, environment: env)
            #expect(again.status != 0)
            #expect(again.stderr.contains("no longer pending"))
        }
    }

    /// A session made by one process, its first prompt followed by another: the thread has no
    /// rollout to resume until the prompt starts a turn.
    @Test func theFirstPromptOfASessionMadeElsewhere() async throws {
        try await withServer { _, _, global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let sent = try await TetherProcess.run(["send", session, "first words", "--follow"] + global, environment: env)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(try sent.events().contains { $0.type == .partCompleted && $0.data["text"] == "Fake model reply. You said: first words" })
            let approvals = try await TetherProcess.run(["approvals"] + global, environment: env)
            #expect(approvals.status == 0, "\(approvals.stderr)")
        }
    }

    @Test func abortFromAnotherProcessAndAnOverloadedServer() async throws {
        var options = CodexAppServerSimulator.Options(token: "cap-token")
        options.overloadEvery = 3
        try await withServer(options) { _, _, global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let send = try TetherProcess(["send", session, "slow please", "--follow"] + global, environment: env)
            _ = try await send.waitForEvent(.partDelta, timeout: .seconds(30))
            let abort = try await TetherProcess.run(["abort", session] + global, environment: env)
            #expect(abort.status == 0, "\(abort.stderr)")
            let result = try await send.finish()
            #expect(try result.events().filter { $0.type == .turnCompleted }.map { $0.data["status"] } == ["cancelled"])
        }
    }

    /// A server draining after SIGTERM refuses new turns: said as such (retryable, exit 69), and
    /// reads still work.
    @Test func aDrainingServerIsSaidToBeShuttingDown() async throws {
        try await withServer { simulator, _, global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let first = try await TetherProcess.run(["send", session, "hello", "--follow"] + global, environment: env)
            #expect(first.status == 0, "\(first.stderr)")
            simulator.beginDrain()
            let refused = try await TetherProcess.run(["send", session, "more"] + global, environment: env)
            #expect(refused.status == 69, "\(refused.stderr)")
            #expect(refused.stderr.contains("shutting down"))
            let history = try await TetherProcess.run(["history", session] + global, environment: env)
            #expect(history.status == 0, "\(history.stderr)")
        }
    }

    /// The link cut mid-turn and while an approval waits (the ws server keeps both): the stream
    /// reconnects and each part, approval and turn comes once.
    @Test func aCutLinkLosesNothingAndRepeatsNothing() async throws {
        try await withServer { _, url, _ in
            let proxy = try FaultProxy(upstreamPort: try #require(url.port), framing: .lines)
            defer { proxy.stop() }
            let config = try TemporaryConfig("""
                [profiles.c]
                backend = "codex"
                url = "ws://127.0.0.1:\(proxy.port)"
                token = { env = "CODEX_TEST_TOKEN" }
                reconnect_delay = 0.2
                """)
            let global = ["--config", config.path, "-p", "c"]
            let session = try await TetherProcess.createSession(global, environment: env)

            let slow = try TetherProcess(["send", session, "slow please", "--follow"] + global, environment: env)
            _ = try await slow.waitForEvent(.partDelta, timeout: .seconds(30))
            try await proxy.restart(downFor: .milliseconds(300))
            let sent = try await slow.finish(timeout: .seconds(60))
            let events = try sent.events()
            #expect(events.filter { $0.type == .connectionState && $0.data["state"] == "connected" }.count >= 2)
            #expect(events.filter { $0.type == .turnCompleted }.map { $0.data["status"] } == ["completed"])
            let completed = events.filter { $0.type == .partCompleted }.compactMap(\.part)
            #expect(Set(completed).count == completed.count)
            #expect(events.first { $0.type == .partCompleted && $0.data["role"] == "assistant" }?.data["text"]?.string?.hasPrefix("Fake model reply") == true)

            let asking = try TetherProcess(["send", session, "cmd please", "--follow"] + global, environment: env)
            let id = try #require(try await asking.waitForEvent(.approvalRequested).data["id"]?.string)
            try await proxy.restart(downFor: .milliseconds(300))
            _ = try await asking.waitForLine(timeout: .seconds(30)) { $0.contains(#""reconnecting""#) }
            let approve = try await TetherProcess.run(["approve", id, "--decision", "accept", "--config", config.path, "-p", "c"],
                                                      environment: env)
            #expect(approve.status == 0, "\(approve.stderr)")
            let answered = try await asking.finish(timeout: .seconds(60))
            let after = try answered.events()
            #expect(after.filter { $0.type == .approvalRequested }.count == 1)
            #expect(after.filter { $0.type == .turnCompleted }.map { $0.data["status"] } == ["completed"])
        }
    }

    /// The daemon's transport (WebSocket on a unix socket).
    @Test func theDaemonSocket() async throws {
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent("codex-\(UUID().uuidString.prefix(8)).sock").path
        let simulator = CodexAppServerSimulator(options: .init())
        _ = try await simulator.start(unixPath: socket)
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.d]
            backend = "codex"
            socket = "\(socket)"
            """)
        let daemon = ["--config", config.path, "-p", "d"]
        let session = try await TetherProcess.createSession(daemon)
        let sent = try await TetherProcess.run(["send", session, "over the socket", "--follow"] + daemon)
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(try sent.events().contains { $0.type == .partCompleted && $0.data["text"] == "Fake model reply. You said: over the socket" })
    }

    /// A stdio child belongs to the process that starts it: under `tether serve` it serves every
    /// request for as long as the gateway runs; a one-shot command that would leave work behind
    /// in it says so and names the gateway.
    @Test func aStdioChildUnderTheGateway() async throws {
        let child = "command = [\"\(TetherProcess.binary.path)\", \"simulate\", \"codex\", \"--stdio\", \"--pacing\", \"1\"]"
        let gateway = try await GatewayFixture(serveTable: "\n[profiles.cx]\nbackend = \"codex\"\n\(child)\n")
        defer { Task { await gateway.shutdown() } }
        gateway.profile = "cx"
        let oneShot = ["--config", gateway.config.path, "-p", "cx"]
        for command in [["sessions", "create"], ["approve", "thr~0~cmd~t~i", "--decision", "accept"], ["send", "thr", "hi"]] {
            let refused = try await TetherProcess.run(command + oneShot)
            #expect(refused.status == 64, "\(command)")
            #expect(refused.stderr.contains("serve"), "\(command): \(refused.stderr)")
        }
        try await gateway.start(["-p", "cx"])
        let (session, approval) = try await gateway.requestApproval("cmd please")
        let answer = try await gateway.post("/v1/profiles/cx/approvals/\(approval)", json: #"{"decision":"accept"}"#)
        #expect(answer.status == 200, "\(answer.body)")
        let done = try await gateway.waitForLogged { $0["type"] == "turn.completed" && $0["session"]?.string == session }
        #expect(done["data"]?["status"] == "completed")
        try await gateway.startTurn(session, "and again")
        let second = try await gateway.waitForLogged {
            $0["type"] == "part.completed" && $0["data"]?["text"] == "Fake model reply. You said: and again"
        }
        #expect(second["session"]?.string == session)
    }
}
