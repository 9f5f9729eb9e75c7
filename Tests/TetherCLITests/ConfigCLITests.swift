import Foundation
import Testing
@testable import TetherTestSupport
import TetherCore
import TetherStreaming

/// `tether profiles …`, config errors and usage errors, through the real binary.
@Suite struct ConfigCLITests {
    static let examplePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config/tether.example.toml").path

    @Test func theExampleConfigListsOneProfilePerBackend() async throws {
        let result = try await TetherProcess.run(["--config", Self.examplePath, "profiles", "list"])
        #expect(result.status == 0, "\(result.stderr)")
        let backends = try result.lines.map { try JSONParserFacade.parse($0)["backend"]?.string }
        #expect(Set(backends.compactMap { $0 }) == Set(BackendKind.allCases.map(\.rawValue)))
    }

    @Test func profilesShowNeverPrintsASecret() async throws {
        let config = try TemporaryConfig("""
            default_profile = "w"
            [profiles.w]
            backend = "codex-worker"
            url = "http://127.0.0.1:8787"
            token = "s3cr3t-literal-token"
            """)
        for format in ["jsonl", "text"] {
            let result = try await TetherProcess.run(["profiles", "show", "w", "--config", config.path, "-o", format])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stdout.contains("s3cr3t"))
            #expect(result.stdout.contains("••••••"))
        }
    }

    @Test func aLiteralSecretInAReadableFileIsRefused() async throws {
        let config = try TemporaryConfig("""
            [profiles.w]
            backend = "codex-worker"
            url = "http://127.0.0.1:8787"
            token = "s3cr3t"
            """)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: config.path)
        let result = try await TetherProcess.run(["profiles", "list", "--config", config.path])
        #expect(result.status == 78)
        #expect(result.stderr.contains("chmod 600"))
        #expect(!result.stderr.contains("s3cr3t"))
    }

    @Test func configErrorsNameTheFileTheKeyAndTheFix() async throws {
        let config = try TemporaryConfig("""
            [profiles.x]
            backend = "opencod"
            url = "http://127.0.0.1:4096"
            """)
        let result = try await TetherProcess.run(["profiles", "list", "--config", config.path])
        #expect(result.status == 78)
        #expect(result.stderr.contains(config.path))
        #expect(result.stderr.contains("profiles.x.backend"))
        #expect(result.stderr.contains("opencode"))
    }

    @Test func aMissingConfigSaysWhereItLooked() async throws {
        let result = try await TetherProcess.run(["profiles", "list"], environment: ["XDG_CONFIG_HOME": "/nonexistent-xdg"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("tether.example.toml"))
    }

    @Test func theConfigComesFromTetherConfig() async throws {
        let result = try await TetherProcess.run(["profiles", "list"], environment: ["TETHER_CONFIG": Self.examplePath])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines.count == BackendKind.allCases.count)
    }

    @Test func usageErrorsExit64() async throws {
        let bad = try await TetherProcess.run(["approve", "x", "--decision", "maybe"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("accept_for_session"))
        let unknown = try await TetherProcess.run(["frobnicate"])
        #expect(unknown.status == 64)
    }

    /// `--listen` is read by the same reader as `[serve] listen`, when the arguments are: a bad
    /// address is a usage error that names the flag and the text, before anything starts.
    @Test("--listen refuses what [serve] listen refuses", arguments: [["serve"], ["simulate", "opencode"]])
    func aBadListenAddressIsAUsageError(command: [String]) async throws {
        for text in ["7420", "host:+80", "ho st:80", "[]:80"] {
            let result = try await TetherProcess.run(command + ["--listen", text], environment: ["XDG_CONFIG_HOME": "/nonexistent-xdg"])
            #expect(result.status == 64, "\(command) --listen \(text): \(result.stderr)")
            #expect(result.stderr.contains("--listen takes HOST:PORT") && result.stderr.contains(text), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func anUnsupportedCommandSaysSoAndExits64() async throws {
        let config = try TemporaryConfig("""
            [profiles.o]
            backend = "opencode"
            url = "http://127.0.0.1:9"
            """)
        let result = try await TetherProcess.run(["notifications", "count", "--config", config.path])
        #expect(result.status == 64)
        #expect(result.stderr.contains("not supported by the opencode backend"))
    }

    @Test func anUnreachableBackendExits69() async throws {
        let config = try TemporaryConfig("""
            [profiles.o]
            backend = "opencode"
            url = "http://127.0.0.1:9"
            """)
        let result = try await TetherProcess.run(["check", "--config", config.path])
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.contains("cannot connect"))
    }

    @Test func helpTeaches() async throws {
        let result = try await TetherProcess.run(["--help"])
        #expect(result.status == 0)
        for word in ["events", "approve", "demo", "Exit codes"] { #expect(result.stdout.contains(word)) }
        let completion = try await TetherProcess.run(["--generate-completion-script", "bash"])
        #expect(completion.status == 0)
        #expect(completion.stdout.contains("_tether"))
    }
}

enum JSONParserFacade {
    static func parse(_ line: String) throws -> JSONValue { try JSONParser.parse(line) }
}
