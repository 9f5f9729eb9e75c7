import Foundation
import Logging
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// A healthy backend that is quiet (a turn waiting for an approval sends nothing but its
/// heartbeats) is not reconnected again and again, however short the profile's `liveness`; and
/// a connection the server talked on resets the backoff, so a drop after it starts at attempt 1.
@Suite(.serialized) struct LivenessCLITests {
    /// How long each test watches a quiet stream: longer than two `liveness = 2` periods, shorter
    /// than the backends' heartbeats (OpenCode 10 s, Codex Worker 15 s).
    static let quiet: Duration = .seconds(6)

    func reconnects(_ events: [Event]) -> [Event] {
        events.filter { $0.type == .connectionState && $0.data["state"] == "reconnecting" }
    }

    /// Codex Worker, `liveness = 2`: the job waits for an approval for 6 s with nothing on the
    /// stream (the worker pings every 15 s); before, it reconnected every 2 s.
    @Test func aCodexWorkerJobWaitingForAnApprovalIsNotReconnected() async throws {
        let simulator = CodexWorkerSimulator(options: .init(token: "t0ken"), logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() })
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.w]
            backend = "codex-worker"
            url = "\(url.absoluteString)"
            token = "t0ken"
            liveness = 2
            reconnect_delay = 0.2
            """)
        let global = ["--config", config.path]
        let thread = try await TetherProcess.createSession(global)
        let send = try TetherProcess(["send", thread, "run the build", "--follow"] + global)
        let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)
        try await Task.sleep(for: Self.quiet)
        #expect(try await TetherProcess.run(["approve", id] + global).status == 0)
        let result = try await send.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(reconnects(try result.events()).isEmpty, "\(result.stdout)")
        #expect(!result.stderr.contains("reconnecting"), "\(result.stderr)")
    }

    /// OpenCode, `liveness = 2`: the permission waits 6 s (heartbeats every 10 s).
    @Test func anOpenCodeSessionWaitingForAPermissionIsNotReconnected() async throws {
        try await withSimulatedOpenCode(extra: "liveness = 2\nreconnect_delay = 0.2") { global in
            let session = try await TetherProcess.createSession(global)
            let send = try TetherProcess(["send", session, OpenCodeCLITests.prompt, "--follow"] + global)
            let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)
            try await Task.sleep(for: Self.quiet)
            #expect(try await TetherProcess.run(["approve", id] + global).status == 0)
            let result = try await send.finish()
            #expect(result.status == 0, "\(result.stderr)")
            #expect(reconnects(try result.events()).isEmpty, "\(result.stdout)")
        }
    }

    /// CodexMonitor: a quiet daemon "restarted" three times (a proxy in front resets every
    /// connection and refuses new ones for 700 ms). The first reconnect after each connection is
    /// attempt 1 (it connected and authenticated); before, only a connection that brought a
    /// notification reset the count, and a quiet one climbed on.
    @Test func aQuietDaemonRestartedReconnectsFromAttemptOne() async throws {
        let daemon = CodexMonitorSimulator(options: .init(token: "s3cret"))
        let bound = try await daemon.start()
        defer { Task { await daemon.stop() } }
        let proxy = try FaultProxy(upstreamPort: bound.port, framing: .lines)
        defer { proxy.stop() }
        let config = try TemporaryConfig("""
            [profiles.m]
            backend = "codexmonitor"
            address = "127.0.0.1:\(proxy.port)"
            workspace = "ws-1"
            token = "s3cret"
            reconnect_delay = 0.1
            """)
        let follow = try TetherProcess(["events", "--follow", "--config", config.path])
        for restart in 0..<3 {
            try await waitForConnections(follow, count: restart + 1)
            try await proxy.restart(downFor: .milliseconds(700))  // down long enough for attempts 1, 2 (and 3)
        }
        try await waitForConnections(follow, count: 4)
        follow.interrupt()
        let events = try await follow.finish().events().filter { $0.type == .connectionState }
        // The first `reconnecting` after each `connected`.
        var afterConnected: [Int64] = []
        for (index, event) in events.enumerated() where event.data["state"] == "connected" {
            if let next = events[(index + 1)...].first(where: { $0.data["state"] == "reconnecting" }) {
                afterConnected.append(next.data["attempt"]?.int ?? -1)
            }
        }
        #expect(afterConnected.count == 3, "\(events.map { $0.data })")
        #expect(afterConnected.allSatisfy { $0 == 1 }, "\(afterConnected): \(events.map { $0.data })")
    }

    func connections(_ process: TetherProcess) -> Int {
        process.stdoutLines.filter { $0.contains("\"connection.state\"") && $0.contains("\"state\":\"connected\"") }.count
    }

    func waitForConnections(_ process: TetherProcess, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while connections(process) < count {
            guard ContinuousClock.now < deadline else {
                throw TetherProcess.TimedOut(what: "\(count) connections", stdout: process.stdoutLines.joined(separator: "\n"), stderr: process.stderrText)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// A server that says `: connected` and then nothing past the liveness timeout: every
    /// reconnect is attempt 1 (the connection was up and the server talked); before, the
    /// attempts climbed 1, 2, 3 and the delay with them.
    @Test func theBackoffStartsOverOnceTheServerTalked() async throws {
        let server = SSEScriptServer()
        let base = try await server.start()
        defer { Task { await server.stop() } }
        server.setScript("quiet", [SSEScriptChunk(": connected\n\n"), .pause(.seconds(60))])
        let sse = try TetherProcess(["sse", base.absoluteString + "/script/quiet", "--liveness", "0.5"])
        let deadline = ContinuousClock.now + .seconds(30)
        while sse.stderrText.components(separatedBy: "reconnecting in").count < 4, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        sse.terminate()
        let stderr = try await sse.finish().stderr
        let attempts = stderr.split(separator: "\n").filter { $0.contains("reconnecting in") }
        #expect(attempts.count >= 3, "\(stderr)")
        #expect(attempts.allSatisfy { $0.hasSuffix("(attempt 1)") }, "\(stderr)")
    }
}
