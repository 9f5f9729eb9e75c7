import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// The real binary against the OpenCode simulator on loopback.
@Suite(.serialized) struct OpenCodeCLITests {
    static let prompt = "Clean the build dir and say done"

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

    @Test func sendStreamApproveComplete() async throws {
        try await withOpenCode { _, global in
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
            #expect(events.allSatisfy { $0.backend == .opencode && $0.profile == "oc" })
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

    @Test func declineFailsTheToolNotTheProcess() async throws {
        try await withOpenCode { _, global in
            let env = environment()
            let session = try await createSession(global, env: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow"] + global, environment: env)
            let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)
            let pending = try await TetherProcess.run(["approvals"] + global, environment: env)
            #expect(try pending.events().compactMap { $0.data["id"]?.string } == [id])
            #expect(try await TetherProcess.run(["approve", id, "--decision", "decline"] + global, environment: env).status == 0)
            let events = try await send.finish().events()
            #expect(events.first { $0.type == .approvalResolved }?.data["decision"] == "decline")
            #expect(events.first { $0.type == .partCompleted && $0.data["kind"] == "command" }?.data["status"] == "failed")
            #expect(events.last { $0.type == .turnCompleted } != nil)
        }
    }

    @Test func abortEndsTheTurnCancelled() async throws {
        try await withOpenCode { _, global in
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

    @Test func aWrongPasswordExits77AndNamesTheProfile() async throws {
        try await withOpenCode { _, global in
            let result = try await TetherProcess.run(["sessions", "list"] + global, environment: environment("wrong"))
            #expect(result.status == 77)
            #expect(result.stderr.contains("profile oc"))
            #expect(!result.stderr.contains("wrong"))
            let none = try await TetherProcess.run(["check"] + global, environment: [:])
            #expect(none.status == 78)  // the env reference is unset: a config error, said so
        }
    }

    @Test func checkReportsVersionAndCapabilities() async throws {
        try await withOpenCode { _, global in
            let result = try await TetherProcess.run(["check"] + global, environment: environment())
            #expect(result.status == 0, "\(result.stderr)")
            let report = try JSONParser.parse(result.stdout)
            #expect(report["version"] == "1.14.50-fake")
            #expect(report["capabilities"]?.array?.contains("approvals") == true)
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

    @Test func aStreamDroppedMidTurnLosesAndRepeatsNothing() async throws {
        let reference = try await runTurn(.init(password: "secret"))
        let dropped = try await runTurn(.init(password: "secret", faults: .init(dropStreamMidTurn: true)))
        #expect(dropped.contains { $0.type == .connectionState && $0.data["state"] == "reconnecting" })
        #expect(completedView(dropped) == completedView(reference))
        let parts = dropped.filter { $0.type == .partCompleted }.compactMap(\.part)
        #expect(Set(parts).count == parts.count)
    }

    @Test func anOldServerWithoutGlobalEventIsFollowedThroughEvent() async throws {
        let events = try await runTurn(.init(password: "secret", serveGlobalEvent: false))
        #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "completed")
    }
}
