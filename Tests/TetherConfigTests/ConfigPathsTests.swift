import Foundation
import Testing
@testable import TetherConfig

@Suite("Config file lookup and the state directory")
struct ConfigPathsTests {
    @Test("--config beats $TETHER_CONFIG beats $XDG_CONFIG_HOME beats ~/.config")
    func precedence() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let xdg = box.path("xdg")
        let homeDefault = box.path("home/.config/tether/config.toml")
        let xdgFile = xdg + "/tether/config.toml"
        let variableFile = box.path("from-variable.toml")
        let argumentFile = box.path("from-argument.toml")
        for file in [homeDefault, xdgFile, variableFile, argumentFile] {
            try box.write(String(file.dropFirst(box.root.count + 1)), minimalOpenCode)
        }
        let all = box.environment(["XDG_CONFIG_HOME": xdg, "TETHER_CONFIG": variableFile])

        #expect(try ConfigPaths.locate(override: argumentFile, environment: all)
                == ConfigLocation(path: argumentFile, origin: .argument))
        #expect(try ConfigPaths.locate(override: nil, environment: all)
                == ConfigLocation(path: variableFile, origin: .tetherConfigVariable))
        #expect(try ConfigPaths.locate(override: nil, environment: box.environment(["XDG_CONFIG_HOME": xdg]))
                == ConfigLocation(path: xdgFile, origin: .xdgConfigHome))
        #expect(try ConfigPaths.locate(override: nil, environment: box.environment())
                == ConfigLocation(path: homeDefault, origin: .homeDefault))
        // The file actually loaded is the one located.
        #expect(try ConfigFile.load(override: nil, environment: all).path == variableFile)
    }

    @Test("an XDG_CONFIG_HOME without the file falls back to ~/.config")
    func xdgFallsBackToHome() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let homeDefault = try box.write("home/.config/tether/config.toml", minimalOpenCode)
        let env = box.environment(["XDG_CONFIG_HOME": box.path("empty-xdg")])
        #expect(try ConfigPaths.locate(override: nil, environment: env).path == homeDefault)
    }

    @Test("empty or relative XDG_CONFIG_HOME is ignored, as the XDG spec says")
    func relativeXDGIgnored() {
        let env = ConfigEnvironment(variables: ["XDG_CONFIG_HOME": "relative/dir"], homeDirectory: "/home/me")
        #expect(ConfigPaths.candidates(override: nil, environment: env).map(\.path)
                == ["/home/me/.config/tether/config.toml"])
        let empty = ConfigEnvironment(variables: ["XDG_CONFIG_HOME": "", "TETHER_CONFIG": ""], homeDirectory: "/home/me")
        #expect(ConfigPaths.candidates(override: nil, environment: empty).map(\.path)
                == ["/home/me/.config/tether/config.toml"])
    }

    @Test("~ is expanded in --config and $TETHER_CONFIG")
    func tildeInOverrides() throws {
        let env = ConfigEnvironment(variables: ["TETHER_CONFIG": "~/t.toml"], homeDirectory: "/home/me")
        #expect(ConfigPaths.candidates(override: nil, environment: env).map(\.path) == ["/home/me/t.toml"])
        #expect(ConfigPaths.candidates(override: "~/x/c.toml", environment: env).map(\.path) == ["/home/me/x/c.toml"])
        #expect(env.expandingTilde(in: "~") == "/home/me")
        #expect(env.expandingTilde(in: "~other/x") == "~other/x")
        #expect(env.expandingTilde(in: "/abs/~/x") == "/abs/~/x")
    }

    @Test("no config file: the error lists every path tried and points to the example")
    func notFoundListsPaths() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let env = box.environment(["XDG_CONFIG_HOME": box.path("xdg")])
        let error = try #require(throws: ConfigError.self) { try ConfigFile.load(override: nil, environment: env) }
        expectComplete(error, code: .configNotFound, file: box.path("home/.config/tether/config.toml"), key: nil,
                       fix: "config/tether.example.toml")
        #expect(error.description.contains(box.path("xdg/tether/config.toml")))
        #expect(error.description.contains("$XDG_CONFIG_HOME"))
        // A first run without a config is pointed at what works without one.
        #expect(error.fix.contains("`tether demo`") && error.fix.contains("`tether simulate opencode`"))
    }

    @Test("an explicit path that does not exist is an error, never a silent fallback")
    func explicitMissing() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        try box.write("home/.config/tether/config.toml", minimalOpenCode)
        let missing = box.path("nope.toml")
        let fromArgument = try #require(throws: ConfigError.self) {
            try ConfigFile.load(override: missing, environment: box.environment())
        }
        expectComplete(fromArgument, code: .configNotFound, file: missing, key: nil, fix: "--config")
        #expect(fromArgument.description.contains("from --config"))
        let fromVariable = try #require(throws: ConfigError.self) {
            try ConfigFile.load(override: nil, environment: box.environment(["TETHER_CONFIG": missing]))
        }
        expectComplete(fromVariable, code: .configNotFound, file: missing, key: nil, fix: "TETHER_CONFIG")
    }

    @Test("a config path that is a directory is an unreadable-file error")
    func directoryIsUnreadable() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let directory = box.path("dir.toml")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let error = try #require(throws: ConfigError.self) {
            try ConfigFile.load(override: directory, environment: box.environment())
        }
        expectComplete(error, code: .unreadableFile, file: directory, key: nil, fix: "readable file",
                       problem: "directory")
    }

    @Test("a config file that is not UTF-8 is refused")
    func notUTF8() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let file = box.path("latin1.toml")
        try Data([0x61, 0x20, 0x3D, 0x20, 0x22, 0xE9, 0x22, 0x0A]).write(to: URL(fileURLWithPath: file))
        let error = try #require(throws: ConfigError.self) { try ConfigFile.load(path: file, environment: box.environment()) }
        expectComplete(error, code: .unreadableFile, file: file, key: nil, fix: "UTF-8")
    }

    @Test("state directory: $XDG_STATE_HOME/tether, else ~/.local/state/tether")
    func stateDirectoryLocation() {
        let xdg = ConfigEnvironment(variables: ["XDG_STATE_HOME": "/var/state/"], homeDirectory: "/home/me")
        #expect(ConfigPaths.stateDirectory(environment: xdg) == "/var/state/tether")
        let home = ConfigEnvironment(variables: ["XDG_STATE_HOME": "not/absolute"], homeDirectory: "/home/me")
        #expect(ConfigPaths.stateDirectory(environment: home) == "/home/me/.local/state/tether")
    }

    @Test("creating the state directory makes it (and its parents) 0700, and tightens an existing one")
    func createStateDirectory() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let env = box.environment()
        let path = try ConfigPaths.createStateDirectory(environment: env)
        #expect(path == box.path("home/.local/state/tether"))
        #expect(try box.mode(of: "home/.local/state/tether") == 0o700)
        #expect(try box.mode(of: "home/.local/state") == 0o700)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        try ConfigPaths.createStateDirectory(environment: env)
        #expect(try box.mode(of: "home/.local/state/tether") == 0o700)
        // Idempotent, and honours XDG_STATE_HOME.
        let xdg = box.environment(["XDG_STATE_HOME": box.path("state")])
        #expect(try ConfigPaths.createStateDirectory(environment: xdg) == box.path("state/tether"))
        #expect(try box.mode(of: "state/tether") == 0o700)
    }

    @Test("a state directory that cannot be created is a config error naming the path and the fix")
    func stateDirectoryFailure() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        try box.write("state", "a file where a directory should be")
        let env = box.environment(["XDG_STATE_HOME": box.path("state")])
        let error = try #require(throws: ConfigError.self) { try ConfigPaths.createStateDirectory(environment: env) }
        expectComplete(error, code: .stateDirectory, file: box.path("state/tether"), key: "XDG_STATE_HOME",
                       fix: "XDG_STATE_HOME")
    }
}
