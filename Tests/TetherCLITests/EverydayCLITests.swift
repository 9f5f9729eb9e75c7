import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// The small things a person meets in everyday use (issue 43's point 9), through the real binary.
@Suite(.serialized) struct EverydayCLITests {
    /// A session whose turn waits for an approval reads "waiting for you", not `[busy]`; in
    /// JSON Lines its status is `waiting_approval`.
    @Test func aSessionWaitingForAnApprovalSaysSo() async throws {
        try await withSimulatedOpenCode { global in
            let session = try await TetherProcess.createSession(global)
            let send = try TetherProcess(["send", session, OpenCodeCLITests.prompt, "--follow"] + global)
            let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)

            let text = try await TetherProcess.run(["sessions", "list", "-o", "text"] + global)
            let line = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix(session) }, "\(text.stdout)")
            #expect(line.contains("[waiting for you]"), "\(line)")
            let listed = try await TetherProcess.run(["sessions", "list"] + global)
            #expect(try listed.events().first { $0.session == session }?.data["status"] == "waiting_approval")

            #expect(try await TetherProcess.run(["approve", id] + global).status == 0)
            #expect(try await send.finish().status == 0)
        }
    }

    /// `notifications count -o text` printed JSON; the text list had no ids though `read` and
    /// `delete` need them.
    @Test func notificationsReadAsTextWithTheirIds() async throws {
        let simulator = NotificationSimulator(options: .init())
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.n]
            backend = "notification"
            url = "\(url.absoluteString)"
            """)
        let global = ["--config", config.path]
        let env = ["XDG_STATE_HOME": NSTemporaryDirectory() + "tether-state-\(UUID().uuidString)"]

        let count = try await TetherProcess.run(["notifications", "count", "-o", "text"] + global, environment: env)
        #expect(count.status == 0, "\(count.stderr)")
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(" unread"), "\(count.stdout)")
        #expect(!count.stdout.contains("{"), "\(count.stdout)")

        let ids = try await TetherProcess.run(["notifications", "list"] + global, environment: env).events().compactMap { $0.data["id"]?.stringish }
        #expect(!ids.isEmpty)
        let list = try await TetherProcess.run(["notifications", "list", "-o", "text"] + global, environment: env)
        for id in ids { #expect(list.stdout.contains(id), "\(id) not in \(list.stdout)") }

        // An id as the list shows it works with `read`; its result reads as text too.
        let read = try await TetherProcess.run(["notifications", "read", ids[0], "-o", "text"] + global, environment: env)
        #expect(read.status == 0, "\(read.stderr)")
        #expect(!read.stdout.contains("{\""), "\(read.stdout)")
    }

    /// A mistyped subcommand gets "did you mean", at the top and under a group with a default.
    @Test(arguments: [(["sessions", "lst"], "list"), (["sesions", "list"], "sessions"), (["notifications", "cont"], "count")])
    func aMistypedCommandGetsDidYouMean(arguments: [String], meant: String) async throws {
        let result = try await TetherProcess.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains("did you mean \"\(meant)\"?"), "\(result.stderr)")
    }

    /// `simulate` lists only what it takes; `demo` no profile or config file.
    @Test func simulateAndDemoListOnlyOptionsThatDoSomething() async throws {
        let simulate = try await TetherProcess.run(["simulate", "--help"])
        let demo = try await TetherProcess.run(["demo", "--help"])
        for option in ["--profile", "--config", "--output", "--raw"] {
            #expect(!simulate.stdout.contains(option), "simulate --help lists \(option)")
        }
        for option in ["--profile", "--config"] {
            #expect(!demo.stdout.contains(option), "demo --help lists \(option)")
        }
        #expect(demo.stdout.contains("--output") && simulate.stdout.contains("--listen"))
    }

    /// `tether check`'s advice does not suggest `tether check`; it names the address and where it is set.
    @Test func checksAdviceIsNotCheck() async throws {
        let refusing = try TestSockets.refusingPort()
        defer { close(refusing.holder) }
        let config = try TemporaryConfig("""
            [profiles.x]
            backend = "opencode"
            url = "http://127.0.0.1:\(refusing.port)"
            """)
        let result = try await TetherProcess.run(["check", "--config", config.path])
        #expect(result.status == 69)
        #expect(!result.stderr.contains("tether check") && !result.stderr.contains("tether --config"), "\(result.stderr)")
        #expect(result.stderr.contains("profiles.x in \(config.path)"), "\(result.stderr)")
    }

    /// Ctrl-C stops a simulator quietly (it printed a socket error), exit 0.
    @Test(arguments: ["opencode", "codex-worker", "notification"])
    func aSimulatorStopsQuietly(backend: String) async throws {
        let simulator = try TetherProcess(["simulate", backend])
        _ = try await simulator.waitForLine { $0.contains("://") }
        simulator.interrupt()
        let result = try await simulator.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("error"), "\(result.stderr)")
    }

    /// `tether simulate` prints the profile that reaches it; pasted into a config, it does.
    @Test(arguments: ["opencode", "codex-worker", "codexmonitor"])
    func aSimulatorPrintsTheProfileThatReachesIt(backend: String) async throws {
        let simulator = try TetherProcess(["simulate", backend])
        _ = try await simulator.waitForLine { !$0.isEmpty }
        let deadline = ContinuousClock.now + .seconds(10)
        while !simulator.stderrText.contains("[profiles.sim]"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let stderr = simulator.stderrText
        let table = try #require(stderr.range(of: "  [profiles.sim]").map { String(stderr[$0.lowerBound...]) }, "\(stderr)")
        let config = try TemporaryConfig(table)
        let check = try await TetherProcess.run(["-p", "sim", "check", "--config", config.path])
        simulator.interrupt()
        _ = try await simulator.finish()
        #expect(check.status == 0, "\(table)\n\(check.stderr)")
    }

    /// A warning whose error carries a hint stays one line, its fields after it (the gateway's
    /// ran the hint's line into the next field).
    @Test func aWarningWithAHintIsOneLine() async throws {
        let refusing = try TestSockets.refusingPort()
        defer { close(refusing.holder) }
        let config = try TemporaryConfig("""
            [profiles.x]
            backend = "opencode"
            url = "http://127.0.0.1:\(refusing.port)"
            """)
        let db = NSTemporaryDirectory() + "tether-gateway-\(UUID().uuidString).db"
        let gateway = try TetherProcess(["--config", config.path, "serve", "--listen", "127.0.0.1:0", "--db", db])
        let deadline = ContinuousClock.now + .seconds(20)
        while !gateway.stderrText.contains("warning"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        gateway.interrupt()
        let stderr = try await gateway.finish().stderr
        let warnings = stderr.split(separator: "\n").filter { $0.contains(" warning ") }
        #expect(!warnings.isEmpty, "\(stderr)")
        #expect(warnings.allSatisfy { $0.contains("profile=x") && $0.contains("error=\"") }, "\(stderr)")
        #expect(!stderr.contains("\n  → "), "\(stderr)")
    }
}
