import Foundation
import Testing
@testable import TetherConfig
import TetherCore

@Suite("backend = \"codex\": one way to reach the app-server")
struct CodexProfileTests {
    func settings(_ body: String) throws -> CodexAppServerSettings {
        let config = try parse("[profiles.c]\nbackend = \"codex\"\n" + body)
        guard case .codex(let settings) = try config.profile(named: "c").settings else {
            throw ConfigError(.invalidValue, file: nil, key: nil, problem: "not a codex profile", fix: "")
        }
        return settings
    }

    @Test("url with a token, the daemon (its default socket or a named one), or a command")
    func threeWays() throws {
        let ws = try settings("url = \"ws://127.0.0.1:4500\"\ntoken = { env = \"T\" }\n")
        #expect(ws.reach == .webSocket(URL(string: "ws://127.0.0.1:4500")!))
        #expect(ws.token != nil)
        #expect(try settings("daemon = true\n").reach == .daemon(socket: nil))
        #expect(try settings("socket = \"/run/codex.sock\"\n").reach == .daemon(socket: "/run/codex.sock"))
        let command = try settings("command = [\"codex\", \"app-server\"]\ndirectory = \"/srv/p\"\n")
        #expect(command.reach == .command(["codex", "app-server"]))
        #expect(command.directory == "/srv/p")
        #expect(command.codex == "codex")
    }

    @Test("none, two, or a token where nothing takes one: refused with what to write")
    func refusals() throws {
        let none = try parseError("[profiles.c]\nbackend = \"codex\"\n")
        expectComplete(none, code: .missingKey, file: "/etc/tether/test.toml", key: nil, fix: "url = \"ws://HOST:PORT\"",
                       problem: "how to reach codex app-server")
        let two = try parseError("[profiles.c]\nbackend = \"codex\"\nurl = \"ws://h:1\"\ncommand = [\"codex\", \"app-server\"]\n")
        expectComplete(two, code: .invalidValue, file: "/etc/tether/test.toml", key: nil, fix: "keep one of", problem: "url and command")
        let token = try parseError("[profiles.c]\nbackend = \"codex\"\ndaemon = true\ntoken = \"x\"\n")
        expectComplete(token, code: .invalidValue, file: "/etc/tether/test.toml", key: "profiles.c.token", fix: "token",
                       problem: "only a ws:// listener takes a token")
        let scheme = try parseError("[profiles.c]\nbackend = \"codex\"\nurl = \"http://h:1\"\n")
        expectComplete(scheme, code: .invalidValue, file: "/etc/tether/test.toml", key: "profiles.c.url", fix: "ws://")
        let empty = try parseError("[profiles.c]\nbackend = \"codex\"\ncommand = []\n")
        expectComplete(empty, code: .invalidValue, file: "/etc/tether/test.toml", key: "profiles.c.command", fix: "app-server")
    }

    @Test("the daemon's default socket is under CODEX_HOME, else ~/.codex")
    func daemonSocket() {
        #expect(CodexHome.daemonSocket(environment: ConfigEnvironment(homeDirectory: "/home/me"))
            == "/home/me/.codex/app-server-control/app-server-control.sock")
        #expect(CodexHome.daemonSocket(environment: ConfigEnvironment(variables: ["CODEX_HOME": "/srv/codex"], homeDirectory: "/home/me"))
            == "/srv/codex/app-server-control/app-server-control.sock")
    }
}
