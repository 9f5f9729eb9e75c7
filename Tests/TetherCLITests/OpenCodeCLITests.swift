import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport
import TetherStreaming

/// The real binary against the OpenCode simulator on loopback, for each server generation
/// Tether speaks to (the legacy Hono server has no `/permission` or `/question` routes).
@Suite(.serialized) struct OpenCodeCLITests {
    static let prompt = "Clean the build dir and say done"

    enum Generation: String, CaseIterable, CustomTestStringConvertible {
        case v1, legacy, v2
        var options: OpenCodeSimulator.Options {
            var options = OpenCodeSimulator.Options(password: "secret", legacy: self == .legacy)
            options.generation = self == .v2 ? 2 : 1
            return options
        }
        /// What the simulator's `/global/health` (1.x) or `/api/info` (2.x) reports.
        var version: String { self == .v2 ? "2.0.17-fake" : "1.14.50-fake" }
        var testDescription: String { rawValue }
    }

    /// Starts a simulator, writes a profile for it, runs `body`, stops the simulator.
    func withOpenCode(_ options: OpenCodeSimulator.Options = .init(password: "secret"), password: String? = "secret",
                      _ body: (OpenCodeSimulator, [String]) async throws -> Void) async throws {
        let simulator = OpenCodeSimulator(options: options)
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let passwordLine = password == nil ? "" : "password = { env = \"OC_TEST_PASSWORD\" }"
        let config = try TemporaryConfig("""
            default_profile = "oc"
            [profiles.oc]
            backend = "opencode"
            url = "\(url.absoluteString)"
            \(passwordLine)
            """)
        try await body(simulator, ["--config", config.path])
    }

    func environment(_ password: String? = "secret") -> [String: String] {
        password.map { ["OC_TEST_PASSWORD": $0] } ?? [:]
    }

    func createSession(_ global: [String], env: [String: String]) async throws -> String {
        try await TetherProcess.createSession(global, environment: env, title: "e2e")
    }

    @Test(arguments: Generation.allCases) func sendStreamApproveComplete(_ generation: Generation) async throws {
        try await withOpenCode(generation.options) { _, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow"] + global, environment: env)
            let approval = try await send.waitForEvent(.approvalRequested)
            let id = try #require(approval.data["id"]?.string)
            #expect(approval.data["risk"] == "high")
            #expect(approval.data["command"] == "rm -rf build")

            // A separate process answers, with nothing but the id.
            let approve = try await TetherProcess.run(["approve", id, "--decision", "accept"] + global, environment: env)
            #expect(approve.status == 0, "\(approve.stderr)")
            #expect(try approve.events().first?.data["decision"] == "accept")

            let result = try await send.finish()
            #expect(result.status == 0, "\(result.stderr)")
            let events = try result.events()
            #expect(events.allSatisfy { $0.backend == .openCode && $0.profile == "oc" })
            #expect(events.filter { $0.type == .turnStarted }.count == 1)
            let done = try #require(events.last { $0.type == .turnCompleted })
            #expect(done.data["status"] == "completed")
            #expect(events.first { $0.type == .approvalResolved }?.data["decision"] == "accept")
            let command = events.first { $0.type == .partCompleted && $0.data["kind"] == "command" }
            #expect(command?.data["status"] == "completed")
            let texts = events.filter { $0.type == .partCompleted && $0.data["kind"] == "text" }
            #expect(texts.first?.data["text"]?.string == Self.prompt)
            #expect(texts.count >= 3)
            let completedParts = events.filter { $0.type == .partCompleted }.compactMap(\.part)
            #expect(Set(completedParts).count == completedParts.count)
        }
    }

    @Test(arguments: Generation.allCases) func declineFailsTheToolNotTheProcess(_ generation: Generation) async throws {
        try await withOpenCode(generation.options) { _, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow"] + global, environment: env)
            let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)
            let pending = try await TetherProcess.run(["approvals"] + global, environment: env)
            switch generation {
            case .v1, .v2:
                #expect(try pending.events().compactMap { $0.data["id"]?.string } == [id])
            case .legacy:
                // Nothing lists a legacy server's pending permissions: say so, point at the stream.
                #expect(pending.status == 64)
                #expect(pending.stderr.contains("legacy API") && pending.stderr.contains("tether \(global.joined(separator: " ")) events --follow"), "\(pending.stderr)")
            }
            #expect(try await TetherProcess.run(["approve", id, "--decision", "decline"] + global, environment: env).status == 0)
            let events = try await send.finish().events()
            #expect(events.first { $0.type == .approvalResolved }?.data["decision"] == "decline")
            #expect(events.first { $0.type == .partCompleted && $0.data["kind"] == "command" }?.data["status"] == "failed")
            #expect(events.last { $0.type == .turnCompleted } != nil)
        }
    }

    @Test(arguments: Generation.allCases) func abortEndsTheTurnCancelled(_ generation: Generation) async throws {
        try await withOpenCode(generation.options) { _, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow"] + global, environment: env)
            _ = try await send.waitForEvent(.approvalRequested)
            let abort = try await TetherProcess.run(["abort", session] + global, environment: env)
            #expect(abort.status == 0, "\(abort.stderr)")
            let result = try await send.finish()
            #expect(result.status == 1)  // the turn did not complete
            let done = try #require(try result.events().last { $0.type == .turnCompleted })
            #expect(done.data["status"] == "cancelled")
        }
    }

    @Test(arguments: [Generation.v1, .v2]) func aWrongPasswordExits77AndNamesTheProfile(_ generation: Generation) async throws {
        try await withOpenCode(generation.options) { _, global in
            let result = try await TetherProcess.run(["sessions", "list"] + global, environment: environment("wrong"))
            #expect(result.status == 77)
            #expect(result.stderr.contains("profile oc"))
            #expect(!result.stderr.contains("wrong"))
            let none = try await TetherProcess.run(["check"] + global, environment: [:])
            #expect(none.status == 78)  // the env reference is unset: a config error, said so
        }
    }

    @Test(arguments: Generation.allCases) func checkReportsVersionAndCapabilities(_ generation: Generation) async throws {
        try await withOpenCode(generation.options) { _, global in
            let result = try await TetherProcess.run(["check"] + global, environment: environment())
            #expect(result.status == 0, "\(result.stderr)")
            let report = try JSONParser.parse(result.stdout)
            #expect(report["version"]?.string == generation.version)
            #expect(report["capabilities"]?.array?.contains("approvals") == true)
            #expect(report["api"]?.string == generation.rawValue)
        }
    }

    /// `events --follow` (all sessions, and one session) sees a turn started by `send` in another
    /// process, and its permission answered by `approve` in a third; the legacy server's missing
    /// routes are no error. At `-v` the generation is logged once.
    @Test(arguments: Generation.allCases) func eventsFollowSeesATurnAndItsApproval(_ generation: Generation) async throws {
        try await withOpenCode(generation.options) { _, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let all = try TetherProcess(["-v", "events", "--follow"] + global, environment: env)
            let one = try TetherProcess(["events", "--session", session, "--follow"] + global, environment: env)
            for follower in [all, one] { _ = try await follower.waitForLine { $0.contains(#""state":"connected""#) } }
            let send = try await TetherProcess.run(["send", session, Self.prompt] + global, environment: env)
            #expect(send.status == 0, "\(send.stderr)")
            let approval = try await all.waitForEvent(.approvalRequested, timeout: .seconds(30))
            let id = try #require(approval.data["id"]?.string)
            #expect(try await one.waitForEvent(.approvalRequested, timeout: .seconds(30)).data["id"]?.string == id)
            #expect(try await TetherProcess.run(["approve", id] + global, environment: env).status == 0)
            for follower in [all, one] {
                let done = try await follower.waitForEvent(.turnCompleted, timeout: .seconds(60))
                #expect(done.data["status"] == "completed")
            }
            all.interrupt()
            one.interrupt()
            let results = [try await all.finish(), try await one.finish()]
            for result in results {
                let events = try result.events()
                #expect(events.filter { $0.type == .approvalResolved }.map { $0.data["decision"] } == ["accept"])
                #expect(events.first { $0.type == .partCompleted && $0.data["kind"] == "command" }?.data["status"] == "completed")
                #expect(!result.stderr.contains("HTTP 404"), "\(result.stderr)")
            }
            let logged = results[0].stderr.components(separatedBy: "OpenCode server speaks the").count - 1
            #expect(logged == 1)
            #expect(results[0].stderr.contains("api=\(generation.rawValue)"))
        }
    }

    /// 2.x: `--model` goes through the session's model route (a 2.x prompt has no model),
    /// `sessions list` on 2.x follows the list's cursor past its 200-a-page limit.
    @Test func openCode2SessionListReadsEveryPage() async throws {
        try await withOpenCode(Generation.v2.options) { simulator, global in
            let env = environment()
            await simulator.createSessions2(205)
            let list = try await TetherProcess.run(["sessions", "list", "-o", "jsonl"] + global, environment: env)
            #expect(list.status == 0, "\(list.stderr)")
            #expect(list.stdout.split(separator: "\n").count == 205 + 1)  // and the seeded fixture session
            let pages = await simulator.requests().filter { $0.method == "GET" && $0.path == "/api/session" }
            #expect(pages.count == 2)
        }
    }

    /// `history` on 2.x reads every page of the message list (200 a page, newest first, then by
    /// cursor without `order`), and replays it oldest first.
    @Test func openCode2HistoryReadsEveryPage() async throws {
        try await withOpenCode(Generation.v2.options) { simulator, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            await simulator.appendFinishedTurns2(150, session: session)
            let history = try await TetherProcess.run(["history", session] + global, environment: env)
            #expect(history.status == 0, "\(history.stderr)")
            let texts = try history.events().filter { $0.type == .partCompleted && $0.data["role"] == "assistant" }.compactMap { $0.data["text"]?.string }
            #expect(texts == (0..<150).map { "reply \($0)" })
            let pages = await simulator.requests().filter { $0.method == "GET" && $0.path == "/api/session/\(session)/message" }
            #expect(pages.count == 3)
            let last = try await TetherProcess.run(["history", session, "--limit", "2"] + global, environment: env)
            #expect(try last.events().filter { $0.type == .turnCompleted }.count == 2)
        }
    }

    /// `history` reads the message union, `sessions show` the session, and `events --session
    /// --since SEQ` replays the durable log after that seq: the next turn, nothing before.
    @Test func openCode2ModelHistoryAndSince() async throws {
        try await withOpenCode(Generation.v2.options) { simulator, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let first = try await TetherProcess.run(["send", session, "Say hello", "--model", "openai/gpt-5", "--follow"] + global, environment: env)
            #expect(first.status == 0, "\(first.stderr)")
            let model = await simulator.requests().first { $0.method == "POST" && $0.path == "/api/session/\(session)/model" }
            #expect(model.map { String(decoding: $0.body, as: UTF8.self) }?.contains(#""id":"gpt-5""#) == true)
            let firstDone = try #require(try first.events().last { $0.type == .turnCompleted })
            let cursor = try #require(firstDone.cursor)

            let second = try await TetherProcess.run(["send", session, "Say goodbye", "--follow"] + global, environment: env)
            #expect(second.status == 0, "\(second.stderr)")

            let history = try await TetherProcess.run(["history", session] + global, environment: env)
            #expect(history.status == 0, "\(history.stderr)")
            let replayed = try history.events()
            #expect(replayed.filter { $0.type == .turnCompleted }.map { $0.data["status"]?.string } == ["completed", "completed"])
            let texts = replayed.filter { $0.type == .partCompleted && $0.data["role"] == "assistant" }.compactMap { $0.data["text"]?.string }
            #expect(texts == ["Fake model reply. You said: Say hello", "Fake model reply. You said: Say goodbye"])

            let show = try await TetherProcess.run(["sessions", "show", session] + global, environment: env)
            #expect(show.status == 0, "\(show.stderr)")
            #expect(show.stdout.contains(session))

            let since = try await TetherProcess.run(["events", "--session", session, "--since", cursor] + global, environment: env)
            #expect(since.status == 0, "\(since.stderr)")
            let resumed = try since.events()
            #expect(resumed.filter { $0.type == .turnStarted }.count == 1)
            #expect(resumed.filter { $0.type == .partCompleted && $0.data["role"] == "user" }.compactMap { $0.data["text"]?.string } == ["Say goodbye"])
            #expect(resumed.allSatisfy { $0.cursor.map { Int($0)! > Int(cursor)! } ?? true })
            let unsessioned = try await TetherProcess.run(["events", "--since", cursor] + global, environment: env)
            #expect(unsessioned.status == 64, "\(unsessioned.stderr)")
        }
    }

    /// `events --follow` started while a turn waits on its approval sees that turn (1.x: the
    /// REST resync; 2.x: the running execution read from its log) and its pending approval, and
    /// follows it to the end once answered.
    @Test(arguments: [Generation.v1, .v2]) func eventsFollowJoinsATurnAlreadyRunning(_ generation: Generation) async throws {
        try await withOpenCode(generation.options) { simulator, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            #expect(try await TetherProcess.run(["send", session, Self.prompt] + global, environment: env).status == 0)
            let request = try await simulator.waitForPendingPermission()
            let follower = try TetherProcess(["events", "--follow"] + global, environment: env)
            let approval = try await follower.waitForEvent(.approvalRequested, timeout: .seconds(30))
            #expect(approval.data["id"]?.string?.hasSuffix(request) == true)
            #expect(try await TetherProcess.run(["approve", try #require(approval.data["id"]?.string)] + global, environment: env).status == 0)
            let done = try await follower.waitForEvent(.turnCompleted, timeout: .seconds(30))
            #expect(done.data["status"] == "completed")
            follower.interrupt()
            let events = try await follower.finish().events()
            let started = try #require(events.first { $0.type == .turnStarted })
            #expect(started.turn == done.turn)
            #expect(events.contains { $0.type == .partCompleted && $0.data["kind"] == "command" && $0.data["status"] == "completed" })
        }
    }

    /// 1.x keeps no replay: `--since` is refused, saying what would take it.
    @Test func sinceIsRefusedByA1xServer() async throws {
        try await withOpenCode(Generation.v1.options) { _, global in
            let result = try await TetherProcess.run(["events", "--session", OpenCodeSimulator.fixtureSessionID, "--since", "3"] + global,
                                                     environment: environment())
            #expect(result.status != 0)
            #expect(result.stderr.contains("OpenCode 2.x"), "\(result.stderr)")
        }
    }

    /// What a consumer that reads only part.completed and turn.completed sees.
    func completedView(_ events: [Event]) -> [String] {
        events.filter { $0.type == .partCompleted || $0.type == .turnCompleted }.map {
            "\($0.type.rawValue) \($0.data["kind"]?.string ?? "") \($0.data["text"]?.string ?? "") \($0.data["status"]?.string ?? "")"
        }
    }

    func runTurn(_ options: OpenCodeSimulator.Options) async throws -> [Event] {
        var events: [Event] = []
        try await withOpenCode(options) { _, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow"] + global, environment: env)
            let id = try #require(try await send.waitForEvent(.approvalRequested, timeout: .seconds(30)).data["id"]?.string)
            #expect(try await TetherProcess.run(["approve", id] + global, environment: env).status == 0)
            let result = try await send.finish(timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            events = try result.events()
        }
        return events
    }

    @Test func legacyServersGiveTheSameNormalizedTurn() async throws {
        let current = try await runTurn(.init(password: "secret"))
        let legacy = try await runTurn(.init(password: "secret", legacy: true))
        #expect(completedView(legacy) == completedView(current))
        #expect(!completedView(current).isEmpty)
    }

    /// V1 and 2.x: a legacy server lists no pending permissions, so one asked while the stream is
    /// down cannot be found again (adapters.md says so); the legacy fault cells run plain turns.
    /// 1.x resyncs over REST; 2.x resumes the session's durable log after the last seq it saw.
    @Test(arguments: [Generation.v1, .v2]) func aStreamDroppedMidTurnLosesAndRepeatsNothing(_ generation: Generation) async throws {
        let reference = try await runTurn(generation.options)
        var faulty = generation.options
        faulty.faults.dropStreamMidTurn = true
        let dropped = try await runTurn(faulty)
        #expect(dropped.contains { $0.type == .connectionState && $0.data["state"] == "reconnecting" })
        #expect(completedView(dropped) == completedView(reference))
        let parts = dropped.filter { $0.type == .partCompleted }.compactMap(\.part)
        #expect(Set(parts).count == parts.count)
    }

    /// In text mode a dropped stream is said on stderr (it printed nothing: the same screen
    /// whether the backend was quiet or gone), and so is the return; stdout stays the turn.
    @Test(arguments: [Generation.v1, .v2]) func textModeSaysWhenTheStreamIsLostAndBack(_ generation: Generation) async throws {
        var faulty = generation.options
        faulty.faults.dropStreamMidTurn = true
        try await withOpenCode(faulty) { _, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow", "-o", "text"] + global, environment: env)
            // Text on stdout: the pending approval is read from `tether approvals` instead.
            var id: String?
            for _ in 0..<300 where id == nil {
                id = try await TetherProcess.run(["approvals"] + global, environment: env).events().first?.data["id"]?.string
                if id == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let approval = try #require(id)
            #expect(try await TetherProcess.run(["approve", approval] + global, environment: env).status == 0)
            let result = try await send.finish(timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("tether: oc: reconnecting"), "\(result.stderr)")
            #expect(result.stderr.contains("tether: oc: connected again"), "\(result.stderr)")
            #expect(!result.stdout.contains("reconnecting"), "\(result.stdout)")
        }
    }

    @Test func anOldServerWithoutGlobalEventIsFollowedThroughEvent() async throws {
        let events = try await runTurn(.init(password: "secret", serveGlobalEvent: false))
        #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "completed")
    }
}
