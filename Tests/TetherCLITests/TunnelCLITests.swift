import Foundation
import Logging
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport
import TetherStreaming

/// Profiles with `tunnel = NAME`, through a real OpenSSH sshd on loopback: the backends are
/// reached only through libssh2 direct-tcpip channels.
@Suite(.serialized) struct TunnelCLITests {
    typealias Setup = SSHTunnelEndpoint

    func withSSHServer(trusted: Bool = true, _ body: (Setup) async throws -> Void) async throws {
        let setup = try SSHTunnelEndpoint(trusted: trusted)
        defer { setup.server.stop() }
        try await body(setup)
    }

    func tunnelTable(_ setup: Setup, extra: String = "") -> String {
        setup.table(extra: extra)
    }

    /// An OpenCode simulator and a profile that reaches it only through the tunnel.
    func withOpenCodeBehindTunnel(_ setup: Setup, extra: String = "",
                                  _ body: ([String], [String: String]) async throws -> Void) async throws {
        let simulator = OpenCodeSimulator(options: .init(password: "secret"))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.home]
            backend = "opencode"
            url = "\(url.absoluteString)"
            password = { env = "OC_PW" }
            tunnel = "vps"
            \(tunnelTable(setup, extra: extra))
            """)
        let env = ["OC_PW": "secret", "XDG_STATE_HOME": NSTemporaryDirectory() + "tether-state-\(UUID().uuidString)"]
        try await body(["--config", config.path], env)
    }

    /// Creates a session, then starts `send --follow` and returns it with the approval's id.
    func startApprovalTurn(_ prompt: String, _ global: [String], _ env: [String: String]) async throws -> (TetherProcess, String) {
        let session = try await TetherProcess.createSession(global, environment: env)
        let send = try TetherProcess(["send", session, prompt, "--follow"] + global, environment: env)
        let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)
        return (send, id)
    }

    @Test func anOpenCodeTurnWithAnApprovalThroughTheTunnel() async throws {
        try await withSSHServer { setup in
            try await withOpenCodeBehindTunnel(setup) { global, env in
                let (send, id) = try await startApprovalTurn("Clean the build dir and say done", global, env)
                #expect(try await TetherProcess.run(["approve", id] + global, environment: env).status == 0)
                let result = try await send.finish()
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try result.events().last { $0.type == .turnCompleted }?.data["status"] == "completed")
            }
        }
    }

    /// The SSH server dies mid-turn and comes back: the tunnel re-establishes itself on the same
    /// local port, the adapter's own reconnect resyncs, and the turn still arrives whole.
    @Test func aTurnSurvivesTheSSHServerRestartingMidStream() async throws {
        try await withSSHServer { setup in
            try await withOpenCodeBehindTunnel(setup, extra: "keepalive = 1") { global, env in
                let (send, id) = try await startApprovalTurn("Clean the build dir and say done", global, env)

                setup.server.kill()
                try await Task.sleep(for: .seconds(1))
                try setup.server.start()

                // Answer once the stream is back (a reconnect after the approval was announced).
                let deadline = ContinuousClock.now + .seconds(60)
                while send.stdoutLines.filter({ $0.contains("connection.state") && $0.contains("\"state\":\"connected\"") }).count < 2,
                      ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(try await TetherProcess.run(["approve", id] + global, environment: env).status == 0)
                let result = try await send.finish(timeout: .seconds(90))
                #expect(result.status == 0, "\(result.stderr)")
                let events = try result.events()
                #expect(events.contains { $0.type == .connectionState && $0.data["state"] == "reconnecting" })
                #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "completed")
                let parts = events.filter { $0.type == .partCompleted }.compactMap(\.part)
                #expect(Set(parts).count == parts.count)
                #expect(events.filter { $0.type == .turnCompleted }.count == 1)
            }
        }
    }

    @Test func aCodexWorkerTurnWithAnApprovalThroughTheTunnel() async throws {
        try await withSSHServer { setup in
            let worker = CodexWorkerSimulator(options: .init(token: "w"), logger: .init(label: "sim") { _ in SwiftLogNoOpLogHandler() })
            let url = try await worker.start()
            defer { Task { await worker.stop() } }
            let config = try TemporaryConfig("""
                [profiles.w]
                backend = "codex-worker"
                url = "\(url.absoluteString)"
                token = { env = "W_T" }
                tunnel = "vps"
                \(tunnelTable(setup))
                """)
            let global = ["--config", config.path]
            let env = ["W_T": "w"]
            let (send, id) = try await startApprovalTurn("run the build", global, env)
            #expect(try await TetherProcess.run(["approve", id] + global, environment: env).status == 0)
            let result = try await send.finish()
            #expect(result.status == 0, "\(result.stderr)")
        }
    }

    @Test func theNotificationRelayThroughTheTunnel() async throws {
        try await withSSHServer { setup in
            let relay = NotificationSimulator()
            let url = try await relay.start()
            defer { Task { await relay.stop() } }
            let config = try TemporaryConfig("""
                [profiles.n]
                backend = "notification"
                url = "\(url.absoluteString)"
                tunnel = "vps"
                \(tunnelTable(setup))
                """)
            let env = ["XDG_STATE_HOME": NSTemporaryDirectory() + "tether-state-\(UUID().uuidString)"]
            let count = try await TetherProcess.run(["notifications", "count", "--config", config.path], environment: env)
            #expect(count.status == 0, "\(count.stderr)")
            #expect(count.stdout.contains("\"unread\":2"))
        }
    }

    @Test func aCodexMonitorDaemonThroughTheTunnel() async throws {
        try await withSSHServer { setup in
            let simulator = CodexMonitorSimulator(options: .init(token: "t"))
            let bound = try await simulator.start()
            defer { Task { await simulator.stop() } }
            let config = try TemporaryConfig("""
                [profiles.m]
                backend = "codexmonitor"
                address = "\(bound.host):\(bound.port)"
                token = { env = "CM_T" }
                workspace = "ws-1"
                tunnel = "vps"
                \(tunnelTable(setup))
                """)
            let global = ["--config", config.path]
            let env = ["CM_T": "t"]
            let session = try await TetherProcess.createSession(global, environment: env)
            let result = try await TetherProcess.run(["send", session, "tell me something", "--follow"] + global, environment: env)
            #expect(result.status == 0, "\(result.stderr)")
            let (send, id) = try await startApprovalTurn("run the tests", global, env)
            #expect(try await TetherProcess.run(["approve", id] + global, environment: env).status == 0)
            #expect(try await send.finish().status == 0)
        }
    }

    @Test func tetherTunnelPrintsTheLocalEndpointFirst() async throws {
        try await withSSHServer { setup in
            let worker = CodexWorkerSimulator(options: .init(), logger: .init(label: "sim") { _ in SwiftLogNoOpLogHandler() })
            let url = try await worker.start()
            defer { Task { await worker.stop() } }
            let config = try TemporaryConfig("""
                [profiles.w]
                backend = "codex-worker"
                url = "\(url.absoluteString)"
                tunnel = "vps"
                \(tunnelTable(setup))
                """)
            let process = try TetherProcess(["tunnel", "--config", config.path])
            let line = try await process.waitForLine { $0.contains("\"local\"") }
            let endpoint = try JSONParser.parse(line)
            #expect(endpoint["remote"]?.string == "\(url.host!):\(url.port!)")
            #expect(endpoint["via"]?.string == "root@127.0.0.1:\(setup.server.port)")
            let local = try #require(endpoint["local"]?.string)
            // Anything can use the printed endpoint: here, curl.
            let health = try Tools.run("/usr/bin/curl", ["-s", "http://\(local)/health"])
            #expect(health.contains("\"status\":\"ok\""))
            process.interrupt()
            #expect(try await process.finish().status == 0)
        }
    }

    @Test func anUnknownHostIsRefusedWithItsFingerprint() async throws {
        try await withSSHServer(trusted: false) { setup in
            let config = try TemporaryConfig("""
                [profiles.w]
                backend = "codex-worker"
                url = "http://127.0.0.1:9"
                tunnel = "vps"
                \(tunnelTable(setup))
                """)
            let result = try await TetherProcess.run(["check", "--config", config.path])
            #expect(result.status == 77)
            #expect(result.stderr.contains(try setup.server.hostKeyFingerprint()))
        }
    }
}
