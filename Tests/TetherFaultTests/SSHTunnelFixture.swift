import Foundation
@testable import TetherTestSupport

/// A real sshd on loopback with a client key and known_hosts, for profiles with `tunnel = "vps"`.
struct SSHTunnelFixture {
    let server: SSHServerFixture
    let tunnelTable: String

    init() throws {
        server = try SSHServerFixture()
        let directory = try TestFiles.makeTemporaryDirectory("fault-client")
        let key = directory + "/id_ed25519"
        try Tools.generateKey(type: "ed25519", at: key)
        try server.authorize(publicKeyOf: key)
        try server.start()
        let knownHosts = directory + "/known_hosts"
        try (try server.knownHostsLine() + "\n").write(toFile: knownHosts, atomically: true, encoding: .utf8)
        tunnelTable = """
            [tunnels.vps]
            host = "127.0.0.1"
            port = \(server.port)
            user = "root"
            identity = "\(key)"
            known_hosts = "\(knownHosts)"
            keepalive = 1
            """
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
