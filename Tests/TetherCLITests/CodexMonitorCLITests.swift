import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// The real binary against the CodexMonitor daemon simulator over TCP.
@Suite(.serialized) struct CodexMonitorCLITests {
    func withDaemon(_ options: CodexMonitorSimulator.Options = .init(token: "s3cret"), profileToken: Bool = true,
                    _ body: (CodexMonitorSimulator, [String]) async throws -> Void) async throws {
        let simulator = CodexMonitorSimulator(options: options)
        let bound = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let tokenLine = profileToken ? "token = { env = \"CM_TEST_TOKEN\" }" : ""
        let config = try TemporaryConfig("""
            [profiles.m]
            backend = "codexmonitor"
            address = "\(bound.host):\(bound.port)"
            workspace = "ws-1"
            \(tokenLine)
            """)
        try await body(simulator, ["--config", config.path, "-p", "m"])
    }

    let env = ["CM_TEST_TOKEN": "s3cret"]

    /// Every assistant message's streamed deltas (if any) assemble to its final text.
    static func deltasMatchFinalText(_ events: [Event]) -> Bool {
        var streamed: [String: String] = [:]
        for event in events where event.type == .partDelta {
            streamed[event.part ?? "", default: ""] += event.data["delta"]?.string ?? ""
        }
        return events.filter { $0.type == .partCompleted && $0.data["role"] == "assistant" }.allSatisfy { part in
            let text = streamed[part.part ?? ""] ?? ""
            return text.isEmpty || text == part.data["text"]?.string
        }
    }

    func session(_ global: [String], env: [String: String]? = nil) async throws -> String {
        try await TetherProcess.createSession(global, environment: env ?? self.env)
    }

    func runApproval(_ global: [String], decision: [String], prompt: String = "run the tests") async throws -> TetherProcess.Result {
        let thread = try await session(global)
        let send = try TetherProcess(["send", thread, prompt, "--follow"] + global, environment: env)
        let approval = try await send.waitForEvent(.approvalRequested)
        let id = try #require(approval.data["id"]?.string)
        let approve = try await TetherProcess.run(["approve", id] + decision + global, environment: env)
        #expect(approve.status == 0, "\(approve.stderr)")
        return try await send.finish()
    }

    /// A daemon without `list_threads` and `resume_thread` (older or forked): `events --follow`
    /// still streams a whole turn, and says once, as an `error` with `retryable: false`, what it
    /// cannot re-read.
    @Test func aDaemonWithoutTheResyncMethodsStillStreams() async throws {
        var options = CodexMonitorSimulator.Options(token: "s3cret")
        options.missingMethods = ["list_threads", "resume_thread"]
        try await withDaemon(options) { _, global in
            let thread = try await session(global)
            for arguments in [["events", "--follow"], ["events", "--session", thread, "--follow"]] {
                let follow = try TetherProcess(["-v"] + arguments + global, environment: env)
                _ = try await follow.waitForLine { $0.contains(#""state":"connected""#) }
                let send = try await TetherProcess.run(["send", thread, "say hello"] + global, environment: env)
                #expect(send.status == 0, "\(send.stderr)")
                let done = try await follow.waitForEvent(.turnCompleted, timeout: .seconds(30))
                #expect(done.data["status"] == "completed")
                follow.interrupt()
                let result = try await follow.finish()
                let errors = try result.events().filter { $0.type == .error }
                let expected = arguments.contains("--session") ? ["resume_thread"] : ["list_threads"]
                #expect(errors.count == expected.count, "\(errors.map(\.data))")
                for (error, method) in zip(errors, expected) {
                    #expect(error.data["retryable"] == false)
                    #expect(error.data["code"] == "unsupported")
                    #expect(error.data["message"]?.string?.contains(method) == true, "\(error.data)")
                }
                #expect(result.stderr.contains("lacks a method"))
            }
        }
    }

    /// With the daemon down, each `connection.state` line goes out before the wait it
    /// announces: "reconnecting, retrying in 30s" arrives now, not 30 s later when the retry
    /// fails too.
    @Test func aReconnectIsAnnouncedBeforeItsWait() async throws {
        let (port, holder) = try TestSockets.refusingPort()
        defer { close(holder) }
        let config = try TemporaryConfig("""
            [profiles.m]
            backend = "codexmonitor"
            address = "127.0.0.1:\(port)"
            reconnect_delay = 30
            """)
        let follow = try TetherProcess(["--config", config.path, "-p", "m", "events", "--follow"])
        defer { follow.kill() }
        let line = try await follow.waitForLine(timeout: .seconds(15)) { $0.contains(#""state":"reconnecting""#) }
        #expect(line.contains("retrying in"))
    }

    @Test func aStreamingTurnWithAnApprovedCommand() async throws {
        try await withDaemon { _, global in
            let result = try await runApproval(global, decision: ["--decision", "accept"])
            #expect(result.status == 0, "\(result.stderr)")
            let events = try result.events()
            #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "completed")
            let command = events.last { $0.type == .partCompleted && $0.data["kind"] == "command" }
            #expect(command?.data["status"] == "completed")
            #expect(command?.data["exit_code"] == 0)
            let parts = events.filter { $0.type == .partCompleted }.compactMap(\.part)
            #expect(Set(parts).count == parts.count)
            #expect(Self.deltasMatchFinalText(events))
        }
    }

    /// Codex's app-server restarts while an approval waits; the new one asks again in the same
    /// thread with request id 0. The old card must not answer the new request, and a follower
    /// is told the old one is gone.
    @Test func anApprovalFromBeforeAnAppServerRestartDoesNotAnswerItsSuccessor() async throws {
        try await withDaemon { simulator, global in
            let thread = try await session(global)
            let first = try TetherProcess(["send", thread, "run the tests", "--follow"] + global, environment: env)
            let old = try await first.waitForEvent(.approvalRequested)
            simulator.restartAppServer()

            let second = try TetherProcess(["send", thread, "run the tests", "--follow"] + global, environment: env)
            let new = try await second.waitForEvent(.approvalRequested)
            #expect(old.data["request_id"] == 0)
            #expect(new.data["request_id"] == 0)
            let oldID = try #require(old.data["id"]?.string)
            let newID = try #require(new.data["id"]?.string)
            #expect(oldID != newID)

            let stale = try await TetherProcess.run(["approve", oldID, "--decision", "accept"] + global, environment: env)
            #expect(stale.status == 1)
            #expect(stale.stderr.contains("no longer pending"), "\(stale.stderr)")
            #expect(!simulator.appServerInputs.contains { $0.message.contains(#""result":{"decision""#) })

            let approve = try await TetherProcess.run(["approve", newID, "--decision", "decline"] + global, environment: env)
            #expect(approve.status == 0, "\(approve.stderr)")
            let result = try await second.finish()
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try result.events().last { $0.type == .partCompleted && $0.data["kind"] == "command" }?.data["status"] == "declined")
            // The first follower saw the new app-server start: its request went, and its turn,
            // which Codex now reads back interrupted, ended — the follow is over, not hung.
            let firstResult = try await first.finish()
            #expect(firstResult.status == 1, "\(firstResult.stderr)")
            let firstEvents = try firstResult.events()
            #expect(firstEvents.first { $0.type == .approvalResolved && $0.data["id"]?.string == oldID }?.data["decision"] == "unknown")
            #expect(firstEvents.last { $0.type == .turnCompleted }.map { "\($0.turn ?? "") \($0.data["status"]?.string ?? "")" }
                    == "\(old.turn ?? "") cancelled")
        }
    }

    @Test(arguments: [
        (["--decision", "decline"], "declined", "completed"),
        (["--decision", "cancel"], "declined", "cancelled"),
        (["--decision", "accept_for_session"], "completed", "completed"),
        (["--decision", "accept_with_amendment", "--amendment", "npm", "test"], "completed", "completed"),
    ])
    func eachDecision(decision: [String], commandStatus: String, outcome: String) async throws {
        try await withDaemon { _, global in
            let result = try await runApproval(global, decision: decision)
            let events = try result.events()
            #expect(events.last { $0.type == .turnCompleted }?.data["status"]?.string == outcome)
            #expect(result.status == (outcome == "completed" ? 0 : 1))
            let command = Self.lastCommand(events)
            if commandStatus == "declined" {
                // Cancel interrupts the turn: the command item may never complete.
                #expect(command == nil || command?.data["status"] == "declined")
            } else {
                #expect(command?.data["status"]?.string == commandStatus)
            }
        }
    }

    static func lastCommand(_ events: [Event]) -> Event? {
        events.filter { event in event.type == EventType.partCompleted && event.data["kind"]?.string == "command" }.last
    }

    @Test func abortInterruptsTheTurn() async throws {
        try await withDaemon { _, global in
            let thread = try await session(global)
            let send = try TetherProcess(["send", thread, "run the tests", "--follow"] + global, environment: env)
            _ = try await send.waitForEvent(.approvalRequested)
            let abort = try await TetherProcess.run(["abort", thread] + global, environment: env)
            #expect(abort.status == 0, "\(abort.stderr)")
            let result = try await send.finish()
            #expect(result.status == 1)
            #expect(try result.events().last { $0.type == .turnCompleted }?.data["status"] == "cancelled")
        }
    }

    @Test func aFailedTurnExits1WithItsError() async throws {
        try await withDaemon { _, global in
            let thread = try await session(global)
            let result = try await TetherProcess.run(["send", thread, "make it fail", "--follow"] + global, environment: env)
            #expect(result.status == 1)
            let events = try result.events()
            #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "failed")
            #expect(events.contains { $0.type == .error && $0.data["retryable"] == true })
        }
    }

    @Test func authOutcomes() async throws {
        try await withDaemon { _, global in
            let bad = try await TetherProcess.run(["sessions", "list"] + global, environment: ["CM_TEST_TOKEN": "nope"])
            #expect(bad.status == 77)
            #expect(!bad.stderr.contains("nope"))
        }
        // A daemon run with --insecure-no-auth answers `auth` with "unknown method: auth": still usable.
        try await withDaemon(.init(token: nil)) { _, global in
            let open = try await TetherProcess.run(["sessions", "list"] + global, environment: env)
            #expect(open.status == 0, "\(open.stderr)")
        }
        try await withDaemon(.init(token: nil), profileToken: false) { _, global in
            let open = try await TetherProcess.run(["check"] + global, environment: [:])
            #expect(open.status == 0, "\(open.stderr)")
        }
    }

    @Test func responsesOutOfOrderChangeNothing() async throws {
        var reference: [String] = []
        try await withDaemon { _, global in
            reference = try await runApproval(global, decision: []).events().filter { $0.type == .partCompleted }.compactMap { $0.data["text"]?.string ?? $0.data["status"]?.string }
        }
        try await withDaemon(.init(token: "s3cret", reorderResponses: true)) { _, global in
            let result = try await runApproval(global, decision: [])
            #expect(result.status == 0, "\(result.stderr)")
            let view = try result.events().filter { $0.type == .partCompleted }.compactMap { $0.data["text"]?.string ?? $0.data["status"]?.string }
            #expect(view == reference)
        }
    }

    @Test func aDroppedConnectionResumesWithoutLossOrDuplicates() async throws {
        var reference: [String] = []
        try await withDaemon { _, global in
            let thread = try await session(global)
            let result = try await TetherProcess.run(["send", thread, "tell me something", "--follow"] + global, environment: env)
            reference = try result.events().filter { $0.type == .partCompleted }.compactMap { $0.data["text"]?.string }
        }
        try await withDaemon(.init(token: "s3cret", pacing: .milliseconds(5), dropConnectionAfter: 12)) { _, global in
            let thread = try await session(global)
            let result = try await TetherProcess.run(["send", thread, "tell me something", "--follow"] + global, environment: env, timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            let events = try result.events()
            let parts = events.filter { $0.type == .partCompleted }
            #expect(Set(parts.compactMap(\.part)).count == parts.count)
            #expect(parts.compactMap { $0.data["text"]?.string } == reference)
            #expect(events.filter { $0.type == .turnCompleted }.count == 1)
        }
    }
}
