import Foundation
@testable import TetherTestSupport

/// A real sshd on loopback with a client key and known_hosts, for profiles with `tunnel = "vps"`.
struct SSHTunnelFixture {
    let endpoint: SSHTunnelEndpoint
    var server: SSHServerFixture { endpoint.server }
    var tunnelTable: String { endpoint.table(extra: "keepalive = 1") }

    init() throws {
        endpoint = try SSHTunnelEndpoint(label: "fault-client")
    }

    /// Kills sshd (and its sessions) and starts it again each time the run has printed more,
    /// `FaultScenario.sshdRestartCount` times; returns how many restarts happened.
    func restartRepeatedly(while run: TetherProcess) async throws -> Int {
        var restarts = 0
        for _ in 0..<FaultScenario.sshdRestartCount {
            let before = run.stdoutLines.count
            let deadline = ContinuousClock.now + .seconds(30)
            while run.stdoutLines.count < before + 20, run.isRunning, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            guard run.isRunning else { break }
            server.kill()
            try await Task.sleep(for: .milliseconds(500))
            try server.start()
            restarts += 1
        }
        return restarts
    }
}
