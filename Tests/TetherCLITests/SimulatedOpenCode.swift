import Foundation
import TetherSim
@testable import TetherTestSupport

/// An OpenCode simulator (password `secret`) and a config whose one profile, `oc`, reaches it,
/// for the tests that run the binary as a person would: `body` gets the options that select the
/// config (`--config PATH`). `extra` adds lines to the profile (`liveness = 2`).
func withSimulatedOpenCode(_ options: OpenCodeSimulator.Options = .init(password: "secret"), extra: String = "",
                           _ body: ([String]) async throws -> Void) async throws {
    let simulator = OpenCodeSimulator(options: options)
    let url = try await simulator.start()
    defer { Task { await simulator.stop() } }
    let config = try TemporaryConfig("""
        [profiles.oc]
        backend = "opencode"
        url = "\(url.absoluteString)"
        password = "secret"
        \(extra)
        """)
    try await body(["--config", config.path])
}
