import Foundation
import Testing
@testable import TetherConfig

@Suite("liveness and reconnect_delay")
struct ConnectionTuningTests {
    static func profile(_ lines: String) -> String {
        "[profiles.home]\nbackend = \"codex-worker\"\nurl = \"http://127.0.0.1:8787\"\n\(lines)\n"
    }

    @Test("absent: the backend's defaults")
    func absent() throws {
        let home = try #require(try parse(Self.profile("")).profiles["home"])
        #expect(home.connection == .backendDefaults)
    }

    @Test("integers and floats are seconds, kept to the millisecond")
    func seconds() throws {
        let home = try #require(try parse(Self.profile("liveness = 10\nreconnect_delay = 0.25")).profiles["home"])
        #expect(home.connection.liveness == .seconds(10))
        #expect(home.connection.reconnectDelay == .milliseconds(250))
    }

    @Test("every backend takes them", arguments: [
        "backend = \"opencode\"\nurl = \"http://h:1\"",
        "backend = \"codexmonitor\"\naddress = \"h:1\"",
        "backend = \"notification\"\nurl = \"ws://h:1\"",
    ])
    func everyBackend(lines: String) throws {
        let config = try parse("[profiles.p]\n\(lines)\nliveness = 2.5\nreconnect_delay = 1\n")
        #expect(config.profiles["p"]?.connection.liveness == .milliseconds(2500))
        #expect(config.profiles["p"]?.connection.reconnectDelay == .seconds(1))
    }

    @Test("wrong types and ranges say what to write", arguments: [
        ("liveness = \"30s\"", ConfigError.Code.wrongType, "must be a number of seconds, not a string"),
        ("liveness = 0", ConfigError.Code.invalidValue, "out of range"),
        ("reconnect_delay = -1", ConfigError.Code.invalidValue, "out of range"),
        ("reconnect_delay = true", ConfigError.Code.wrongType, "must be a number of seconds, not a boolean"),
    ])
    func invalid(line: String, code: ConfigError.Code, problem: String) throws {
        let error = try parseError(Self.profile(line))
        #expect(error.code == code)
        #expect(error.description.contains(problem))
        #expect(error.description.contains(line.split(separator: " ")[0]))
    }

    @Test("profiles show prints them in seconds")
    func redacted() throws {
        let config = try parse(Self.profile("liveness = 10\nreconnect_delay = 0.25"))
        let shown = try config.redactedProfile(named: "home")
        let fields = shown.settings.map { "\($0.key) = \($0.value)" }
        #expect(fields.contains("liveness = 10"))
        #expect(fields.contains("reconnect_delay = 0.25"))
    }
}
