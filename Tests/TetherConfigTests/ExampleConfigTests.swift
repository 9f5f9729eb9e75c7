import Foundation
import Testing
@testable import TetherConfig
import TetherCore

@Suite("config/tether.example.toml")
struct ExampleConfigTests {
    /// `Tests/TetherConfigTests/<this file>` → repository root → `config/tether.example.toml`.
    static let examplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(ConfigPaths.examplePath).path

    @Test("parses cleanly: one profile per backend, one tunnel, a default, secrets only as env references")
    func exampleParses() throws {
        let env = ConfigEnvironment(homeDirectory: "/home/me")
        let config = try ConfigFile.load(path: Self.examplePath, environment: env)
        #expect(Set(config.profiles.values.map(\.backend)) == Set(BackendKind.allCases))
        #expect(config.profiles.count == BackendKind.allCases.count)
        #expect(config.tunnels.count == 1)
        let defaultProfile = try #require(config.defaultProfile)
        #expect(try config.profile(named: nil).name == defaultProfile)
        #expect(config.profiles.values.contains { $0.tunnel != nil })
        #expect(!config.allSecrets.isEmpty)
        for secret in config.allSecrets {
            guard case .environment = secret.reference else {
                Issue.record("\(secret.key) is not an env reference")
                continue
            }
        }
    }

    @Test("found through $TETHER_CONFIG like any config file")
    func exampleViaEnvironment() throws {
        let env = ConfigEnvironment(variables: ["TETHER_CONFIG": Self.examplePath], homeDirectory: "/nonexistent")
        #expect(try ConfigFile.load(override: nil, environment: env).path == Self.examplePath)
    }
}
