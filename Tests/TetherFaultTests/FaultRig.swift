import Foundation
import Logging
import TetherCore
import TetherSim
@testable import TetherTestSupport
import TetherStreaming

/// One backend under test: its simulator, a profile that reaches it through a fault proxy, and
/// a long turn to break. Each rig drives the real `tether` binary as a user would.
protocol FaultRig: Sendable {
    /// The backend's name in the summary table.
    var name: String { get }
    var framing: FaultProxy.Framing { get }
    /// Which proxied connections are the event stream (the client's first bytes decide).
    func isStream(_ clientBytes: [UInt8]) -> Bool
    /// Starts the simulator; returns its loopback port.
    func start() async throws -> Int
    func stop() async
    /// The `[profiles.x]` body for a backend at 127.0.0.1:`port` (without the tuning keys).
    func profile(port: Int) -> String
    var environment: [String: String] { get }
    /// Arguments for a turn of about `length` streamed pieces, run to its end (`send … --follow`),
    /// after whatever setup it needs (a session created through `global`).
    func turnArguments(length: Int, global: [String]) async throws -> [String]
    /// The server's credentials change (`true`): connections made from now on with the profile's
    /// are refused; `false` puts the profile's back.
    func setCredentialsRevoked(_ revoked: Bool)
    /// Whether the scenario applies (a relay without credentials cannot revoke them).
    func supports(_ scenario: FaultScenario) -> Bool
    /// Drives a run that does not end by itself, then ends it (default: nothing to do).
    func drive(_ run: TetherProcess, length: Int) async throws
    /// How a run that went well exits.
    var successExit: Int32 { get }
}

extension FaultRig {
    func supports(_ scenario: FaultScenario) -> Bool { true }
    func drive(_ run: TetherProcess, length: Int) async throws {}
    var successExit: Int32 { 0 }

    static func containsASCII(_ bytes: [UInt8], _ needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        guard bytes.count >= pattern.count else { return false }
        for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
            if bytes[start..<(start + pattern.count)].elementsEqual(pattern) { return true }
        }
        return false
    }

    /// `sessions create` through the proxied profile; returns the new session's id.
    func createSession(_ global: [String]) async throws -> String {
        try await TetherProcess.createSession(global, environment: environment)
    }
}

struct FaultHarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Simulator pacing: slow enough that faults land mid-turn, fast enough for `make test`.
let faultPacing: Duration = .milliseconds(25)

/// OpenCode of the current generation, or the legacy Hono server (`legacy`: its shapes, and no
/// `/permission` or `/question` routes).
final class OpenCodeRig: FaultRig, @unchecked Sendable {
    let name: String
    let framing = FaultProxy.Framing.sse
    let simulator: OpenCodeSimulator
    let environment = ["OC_FAULT_PASSWORD": "secret"]

    /// `generation` 2: the 2.x server (`/api/event`, and the durable session log a reconnect
    /// resumes from by seq instead of the 1.x REST resync).
    init(legacy: Bool = false, generation: Int = 1) {
        name = generation == 2 ? "opencode-2" : legacy ? "opencode-legacy" : "opencode"
        var options = OpenCodeSimulator.Options(password: "secret", heartbeatInterval: .seconds(1), pacing: faultPacing, legacy: legacy)
        options.generation = generation
        simulator = OpenCodeSimulator(options: options)
    }

    func isStream(_ clientBytes: [UInt8]) -> Bool {
        Self.containsASCII(clientBytes, "GET /global/event") || Self.containsASCII(clientBytes, "GET /api/event ")
    }
    func start() async throws -> Int { try await simulator.start().port ?? 0 }
    func stop() async { await simulator.stop() }

    func profile(port: Int) -> String {
        """
        backend = "opencode"
        url = "http://127.0.0.1:\(port)"
        password = { env = "OC_FAULT_PASSWORD" }
        """
    }

    /// A plain turn whose reply echoes the prompt in two-word deltas: `length` words.
    func turnArguments(length: Int, global: [String]) async throws -> [String] {
        let prompt = (0..<length).map { "word\($0)" }.joined(separator: " ")
        return ["send", try await createSession(global), prompt, "--follow"]
    }

    func setCredentialsRevoked(_ revoked: Bool) { simulator.rotatePassword(to: revoked ? "rotated" : "secret") }
}

final class CodexWorkerRig: FaultRig, @unchecked Sendable {
    let name = "codex-worker"
    let framing = FaultProxy.Framing.sse
    let simulator = CodexWorkerSimulator(
        options: .init(token: "t0ken", pingInterval: .seconds(1), pacing: faultPacing),
        logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() })
    let environment = ["WORKER_FAULT_TOKEN": "t0ken"]

    func isStream(_ clientBytes: [UInt8]) -> Bool {
        Self.containsASCII(clientBytes, "GET /v1/jobs/") && Self.containsASCII(clientBytes, "/events")
    }
    func start() async throws -> Int { try await simulator.start().port ?? 0 }
    func stop() async { await simulator.stop() }

    func profile(port: Int) -> String {
        """
        backend = "codex-worker"
        url = "http://127.0.0.1:\(port)"
        token = { env = "WORKER_FAULT_TOKEN" }
        """
    }

    /// `long N`: one agent message streamed as exactly `length` deltas.
    func turnArguments(length: Int, global: [String]) async throws -> [String] {
        ["send", try await createSession(global), "long \(length)", "--follow"]
    }

    func setCredentialsRevoked(_ revoked: Bool) { simulator.rotateToken(to: revoked ? "rotated" : "t0ken") }
}

final class CodexMonitorRig: FaultRig, @unchecked Sendable {
    let name = "codexmonitor"
    let framing = FaultProxy.Framing.lines
    let simulator = CodexMonitorSimulator(options: .init(token: "s3cret", pacing: faultPacing))
    let environment = ["CM_FAULT_TOKEN": "s3cret"]

    func isStream(_ clientBytes: [UInt8]) -> Bool { true }
    func start() async throws -> Int { try await simulator.start().port }
    func stop() async { await simulator.stop() }

    func profile(port: Int) -> String {
        """
        backend = "codexmonitor"
        address = "127.0.0.1:\(port)"
        workspace = "ws-1"
        token = { env = "CM_FAULT_TOKEN" }
        """
    }

    /// `long N`: one agent message in `length` deltas.
    func turnArguments(length: Int, global: [String]) async throws -> [String] {
        ["send", try await createSession(global), "long \(length)", "--follow"]
    }

    func setCredentialsRevoked(_ revoked: Bool) { simulator.rotateToken(to: revoked ? "rotated" : "s3cret") }
}

final class NotificationRig: FaultRig, @unchecked Sendable {
    let name = "notification"
    let framing = FaultProxy.Framing.webSocket
    let simulator = NotificationSimulator(options: .init())
    let environment = ["XDG_STATE_HOME": NSTemporaryDirectory() + "tether-fault-state-\(UUID().uuidString)"]
    /// Interrupted once every notification arrived: `watch` exits 130 as the design says.
    let successExit: Int32 = 130
    /// The watch's stable peer id (the profile's `peer_id`): pushes go to it, queued while it is away.
    static let watcherID = "fault-watcher"

    /// Every connection of the run is the watch's (pushes come from the simulator, not from tether).
    func isStream(_ clientBytes: [UInt8]) -> Bool { true }
    func start() async throws -> Int { try await simulator.start().port ?? 0 }
    func stop() async { await simulator.stop() }

    func profile(port: Int) -> String {
        """
        backend = "notification"
        url = "ws://127.0.0.1:\(port)"
        peer_id = "\(Self.watcherID)"
        """
    }

    func turnArguments(length: Int, global: [String]) async throws -> [String] { ["notifications", "watch"] }
    func setCredentialsRevoked(_ revoked: Bool) {}
    func supports(_ scenario: FaultScenario) -> Bool { scenario != .revoked }

    /// The desktop pushes `length` notifications to the watcher's peer id (the relay queues them
    /// while it is away), paced; once all arrived (or 60 s passed), the watch is interrupted.
    func drive(_ run: TetherProcess, length: Int) async throws {
        let watcher = Self.watcherID
        var registered = false
        for _ in 0..<400 where !registered {
            registered = simulator.peers().contains { $0.peerID == watcher }
            if !registered { try await Task.sleep(for: .milliseconds(25)) }
        }
        guard registered else { throw FaultHarnessError("notification: the watch never registered with the relay") }
        for index in 0..<length {
            try simulator.push(title: "note \(index)", body: "body of note \(index)", to: watcher)
            try await Task.sleep(for: faultPacing)
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while run.isRunning, ContinuousClock.now < deadline {
            let received = Set(run.stdoutLines.filter { $0.contains("\"notification.received\"") }.compactMap {
                try? EventCodec.decode($0).data["id"]?.string
            })
            if received.count >= length { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .milliseconds(300))  // a late duplicate would show up here
        run.interrupt()
    }
}

/// OpenCode through a `tether serve` (`backend = "gateway"`): the faults land between the CLI and
/// the gateway, whose SSE the CLI resumes by seq with `Last-Event-ID`.
final class GatewayRig: FaultRig, @unchecked Sendable {
    let name = "gateway"
    let framing = FaultProxy.Framing.sse
    let simulator = OpenCodeSimulator(options: .init(password: "secret", heartbeatInterval: .seconds(1), pacing: faultPacing))
    let environment: [String: String] = [:]
    private var gateway: TetherProcess?
    private var config: TemporaryConfig?

    /// The event stream, not its long-poll form (`send --follow` reads the log's end with it first).
    func isStream(_ clientBytes: [UInt8]) -> Bool {
        Self.containsASCII(clientBytes, "GET /v1/events") && !Self.containsASCII(clientBytes, "format=json")
    }

    func start() async throws -> Int {
        let url = try await simulator.start()
        let config = try TemporaryConfig("""
            [profiles.oc]
            backend = "opencode"
            url = "\(url.absoluteString)"
            password = { env = "OC_FAULT_PASSWORD" }
            """)
        let database = (config.path as NSString).deletingLastPathComponent + "/gateway.sqlite"
        let gateway = try TetherProcess(["--config", config.path, "serve", "--listen", "127.0.0.1:0", "--db", database],
                                        environment: ["OC_FAULT_PASSWORD": "secret"])
        let line = try await gateway.waitForLine { $0.hasPrefix("{\"listen\"") }
        self.gateway = gateway
        self.config = config
        guard let listen = try JSONParser.parse(line)["listen"]?.string, let port = URL(string: listen)?.port else {
            throw FaultHarnessError("gateway: no listen address in \(line)")
        }
        return port
    }

    func stop() async {
        gateway?.terminate()
        _ = try? await gateway?.finish()
        await simulator.stop()
    }

    func profile(port: Int) -> String {
        """
        backend = "gateway"
        url = "http://127.0.0.1:\(port)"
        remote_profile = "oc"
        """
    }

    /// As OpenCode's: a reply echoing the prompt's `length` words.
    func turnArguments(length: Int, global: [String]) async throws -> [String] {
        let prompt = (0..<length).map { "word\($0)" }.joined(separator: " ")
        return ["send", try await createSession(global), prompt, "--follow"]
    }

    /// The gateway's tokens come from its config at start: they cannot change under a running one.
    func setCredentialsRevoked(_ revoked: Bool) {}
    func supports(_ scenario: FaultScenario) -> Bool { scenario != .revoked }
}
