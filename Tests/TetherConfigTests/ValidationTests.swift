import Foundation
import Testing
@testable import TetherConfig

@Suite("Validation errors name the file, the key and the fix")
struct ValidationTests {
    let file = "/etc/tether/test.toml"

    @Test("invalid TOML reports the line")
    func invalidTOML() throws {
        let error = try parseError("[profiles.home\nbackend = \"opencode\"\n")
        expectComplete(error, code: .invalidTOML, file: file, key: "line 1, column 15", fix: "line 1")
    }

    @Test("duplicate keys are invalid TOML")
    func duplicateKey() throws {
        let error = try parseError(minimalOpenCode + "\nurl = \"http://other:1\"\n")
        #expect(error.code == .invalidTOML)
        #expect(error.description.contains(file))
    }

    @Test("unknown profile key suggests the closest valid key")
    func unknownProfileKey() throws {
        let error = try parseError(minimalOpenCode + "\npasword = { env = \"P\" }\n")
        expectComplete(error, code: .unknownKey, file: file, key: "profiles.home.pasword",
                       fix: "rename it to password", problem: "did you mean \"password\"?")
        #expect(error.fix.contains("url, username, password, directory"))
    }

    @Test("suggestions", arguments: [
        ("usrname", "username"), ("Username", "username"), ("peer-id", "peer_id"), ("knownHosts", "known_hosts"),
        ("known_host", "known_hosts"), ("trust_on_first_used", "trust_on_first_use"), ("adress", "address"),
        ("tokn", "token"), ("user", "username"), ("defaultprofile", "default_profile"), ("pasword", "password"),
        ("drectory", "directory"), ("urk", "url"), ("tokne", "token"),
    ])
    func suggestions(typo: String, expected: String) {
        let candidates = ["url", "username", "password", "directory", "peer_id", "known_hosts", "trust_on_first_use",
                          "address", "token", "default_profile"]
        #expect(KeySuggestion.closest(to: typo, among: candidates) == expected)
    }

    @Test("a far-off key gets no suggestion, only the list of valid keys")
    func noSuggestion() throws {
        #expect(KeySuggestion.closest(to: "colour", among: ["url", "token"]) == nil)
        #expect(KeySuggestion.closest(to: "c", among: ["a", "b"]) == nil)
        #expect(KeySuggestion.closest(to: "ur", among: ["url"]) == nil)
        let error = try parseError(minimalOpenCode + "\ncolour = \"blue\"\n")
        expectComplete(error, code: .unknownKey, file: file, key: "profiles.home.colour",
                       fix: "remove it; the keys an opencode profile takes are: backend, tunnel, url")
        #expect(!error.problem.contains("did you mean"))
    }

    @Test("a key of another backend says which backend it belongs to")
    func keyOfAnotherBackend() throws {
        let error = try parseError(minimalOpenCode + "\naddress = \"h:1\"\n")
        expectComplete(error, code: .unknownKey, file: file, key: "profiles.home.address", fix: "remove it",
                       problem: "a key of codexmonitor profiles")
    }

    @Test("unknown top-level, tunnel and secret-table keys")
    func unknownKeysElsewhere() throws {
        let top = try parseError("default-profile = \"home\"\n" + minimalOpenCode)
        expectComplete(top, code: .unknownKey, file: file, key: "default-profile", fix: "rename it to default_profile")

        let tunnel = try parseError("[tunnels.vps]\nhost = \"h\"\nuser = \"u\"\nagent = true\nknownhosts = \"/k\"\n")
        expectComplete(tunnel, code: .unknownKey, file: file, key: "tunnels.vps.knownhosts",
                       fix: "rename it to known_hosts")

        let secret = try parseError(minimalOpenCode + "\npassword = { environment = \"P\" }\n")
        expectComplete(secret, code: .unknownKey, file: file, key: "profiles.home.password.environment",
                       fix: "rename it to env")
    }

    @Test("wrong value types name the expected type", arguments: [
        ("url = 4096", "profiles.home.url", "must be a string, not an integer"),
        ("username = true", "profiles.home.username", "must be a string, not a boolean"),
        ("password = 1234", "profiles.home.password", "must be a string or { env = \"NAME\" } or { file = \"PATH\" }"),
        ("directory = [\"/a\"]", "profiles.home.directory", "not an array"),
        ("tunnel = 1.5", "profiles.home.tunnel", "not a floating-point number"),
    ])
    func wrongProfileTypes(line: String, key: String, problem: String) throws {
        let url = line.hasPrefix("url") ? "" : "url = \"http://h:1\"\n"
        let error = try parseError("[profiles.home]\nbackend = \"opencode\"\n\(url)\(line)\n")
        expectComplete(error, code: .wrongType, file: file, key: key, fix: "write it as", problem: problem)
    }

    @Test("wrong tunnel value types", arguments: [
        ("port = \"22\"", "tunnels.vps.port", "must be an integer, not a string"),
        ("agent = \"yes\"", "tunnels.vps.agent", "must be a boolean"),
        ("trust_on_first_use = 1", "tunnels.vps.trust_on_first_use", "must be a boolean"),
        ("keepalive = \"30s\"", "tunnels.vps.keepalive", "must be an integer"),
        ("identity = 5", "tunnels.vps.identity", "must be a string"),
    ])
    func wrongTunnelTypes(line: String, key: String, problem: String) throws {
        let error = try parseError("[tunnels.vps]\nhost = \"h\"\nuser = \"u\"\n\(line)\n")
        expectComplete(error, code: .wrongType, file: file, key: key, fix: "write it as", problem: problem)
    }

    @Test("tables where values belong, and values where tables belong")
    func tableShapes() throws {
        let profiles = try parseError("profiles = \"home\"\n")
        expectComplete(profiles, code: .wrongType, file: file, key: "profiles", fix: "[profiles.home]")
        let profile = try parseError("[profiles]\nhome = \"opencode\"\n")
        expectComplete(profile, code: .wrongType, file: file, key: "profiles.home", fix: "[profiles.home]")
        let defaultProfile = try parseError("default_profile = 3\n")
        expectComplete(defaultProfile, code: .wrongType, file: file, key: "default_profile", fix: "default_profile = ")
    }

    @Test("unknown backend lists the valid ones and suggests the closest")
    func unknownBackend() throws {
        let error = try parseError("[profiles.home]\nbackend = \"open-code\"\nurl = \"http://h:1\"\n")
        expectComplete(error, code: .unknownBackend, file: file, key: "profiles.home.backend",
                       fix: "codex-worker, opencode, codex, codexmonitor, notification", problem: "did you mean \"opencode\"?")
    }

    @Test("missing backend and missing required keys")
    func missingKeys() throws {
        let backend = try parseError("[profiles.home]\nurl = \"http://h:1\"\n")
        expectComplete(backend, code: .missingKey, file: file, key: "profiles.home.backend",
                       fix: "backend = \"opencode\"", problem: "codex-worker, opencode, codex, codexmonitor, notification")
        let url = try parseError("[profiles.w]\nbackend = \"codex-worker\"\n")
        expectComplete(url, code: .missingKey, file: file, key: "profiles.w.url", fix: "add url = \"http://")
        let address = try parseError("[profiles.m]\nbackend = \"codexmonitor\"\n")
        expectComplete(address, code: .missingKey, file: file, key: "profiles.m.address", fix: "add address = ")
        let wsURL = try parseError("[profiles.n]\nbackend = \"notification\"\n")
        expectComplete(wsURL, code: .missingKey, file: file, key: "profiles.n.url", fix: "wss://")
        let host = try parseError("[tunnels.vps]\nuser = \"u\"\nagent = true\n")
        expectComplete(host, code: .missingKey, file: file, key: "tunnels.vps.host", fix: "add host = ")
        let user = try parseError("[tunnels.vps]\nhost = \"h\"\nagent = true\n")
        expectComplete(user, code: .missingKey, file: file, key: "tunnels.vps.user", fix: "add user = ")
    }

    @Test("URLs must parse and have the backend's scheme", arguments: [
        ("opencode", "ws://127.0.0.1:4096", "takes http:// or https://"),
        ("codex-worker", "ftp://host/x", "takes http:// or https://"),
        ("codex-worker", "127.0.0.1:8787", "not a valid http:// or https:// URL"),
        ("opencode", "http://", "not a valid http:// or https:// URL"),
        ("opencode", "http://host:70000", "outside 1–65535"),
        ("notification", "http://relay:9001", "takes ws:// or wss://"),
        ("notification", "not a url", "not a valid ws:// or wss:// URL"),
    ])
    func urlSchemes(backend: String, url: String, problem: String) throws {
        let error = try parseError("[profiles.p]\nbackend = \"\(backend)\"\nurl = \"\(url)\"\n")
        expectComplete(error, code: .invalidValue, file: file, key: "profiles.p.url", fix: "url = \"", problem: problem)
    }

    @Test("credentials inside a URL are refused, since they would escape redaction")
    func credentialsInURL() throws {
        let error = try parseError("[profiles.p]\nbackend = \"opencode\"\nurl = \"http://opencode:hunter2@h:4096\"\n")
        expectComplete(error, code: .invalidValue, file: file, key: "profiles.p.url", fix: "username + password")
        #expect(!error.description.contains("hunter2"))
    }

    /// A URL refused for another reason first (its scheme, its port, or no host at all) is
    /// quoted in the error without the password it carries.
    @Test("a refused URL is quoted without its credentials", arguments: [
        "ftp://me:hunter2@host", "http://me:hunter2@host:99999", "http://me:hunter2@", "http://a@b:hunter2@host/x@y",
    ])
    func refusedURLsHideCredentials(url: String) throws {
        let error = try parseError("[profiles.p]\nbackend = \"opencode\"\nurl = \"\(url)\"\n")
        #expect(!error.description.contains("hunter2"), "\(error.description)")
    }

    @Test("address must be host:port with a valid port")
    func badAddress() throws {
        let error = try parseError("[profiles.m]\nbackend = \"codexmonitor\"\naddress = \"127.0.0.1:99999\"\n")
        expectComplete(error, code: .invalidValue, file: file, key: "profiles.m.address",
                       fix: "address = \"127.0.0.1:4732\"", problem: "not host:port")
    }

    @Test("out-of-range ports and empty strings")
    func badValues() throws {
        let port = try parseError("[tunnels.vps]\nhost = \"h\"\nuser = \"u\"\nagent = true\nport = 0\n")
        expectComplete(port, code: .invalidValue, file: file, key: "tunnels.vps.port", fix: "port = 22",
                       problem: "out of range")
        let localPort = try parseError("[tunnels.vps]\nhost = \"h\"\nuser = \"u\"\nagent = true\nlocal_port = 65536\n")
        expectComplete(localPort, code: .invalidValue, file: file, key: "tunnels.vps.local_port", fix: "local_port = ")
        let empty = try parseError(minimalOpenCode + "\nusername = \"\"\n")
        expectComplete(empty, code: .invalidValue, file: file, key: "profiles.home.username", fix: "username = ",
                       problem: "must not be empty")
    }

    @Test("secret references: both env and file, empty table, empty literal")
    func badSecretReferences() throws {
        let both = try parseError(minimalOpenCode + "\npassword = { env = \"A\", file = \"/b\" }\n")
        expectComplete(both, code: .invalidValue, file: file, key: "profiles.home.password", fix: "{ env = ",
                       problem: "both env and file")
        let empty = try parseError(minimalOpenCode + "\npassword = {}\n")
        expectComplete(empty, code: .invalidValue, file: file, key: "profiles.home.password", fix: "{ env = ")
        let literal = try parseError(minimalOpenCode + "\npassword = \"\"\n")
        expectComplete(literal, code: .invalidValue, file: file, key: "profiles.home.password", fix: "{ env = ")
        let envType = try parseError(minimalOpenCode + "\npassword = { env = 1 }\n")
        expectComplete(envType, code: .wrongType, file: file, key: "profiles.home.password.env", fix: "env = \"NAME\"")
    }

    @Test("tunnel = NAME must name an existing [tunnels.NAME]")
    func unknownTunnel() throws {
        let none = try parseError(minimalOpenCode + "\ntunnel = \"vps\"\n")
        expectComplete(none, code: .unknownTunnel, file: file, key: "profiles.home.tunnel", fix: "[tunnels.vps]",
                       problem: "no tunnels are defined")
        let typo = try parseError(minimalOpenCode + "\ntunnel = \"vsp\"\n\n[tunnels.vps]\nhost = \"h\"\nuser = \"u\"\nagent = true\n")
        expectComplete(typo, code: .unknownTunnel, file: file, key: "profiles.home.tunnel", fix: "fix the name",
                       problem: "did you mean \"vps\"?")
        #expect(typo.problem.contains("defined tunnels: vps"))
    }

    @Test("a tunnel needs identity or agent, and a passphrase needs an identity")
    func tunnelAuthentication() throws {
        let none = try parseError("[tunnels.vps]\nhost = \"h\"\nuser = \"u\"\n")
        expectComplete(none, code: .missingKey, file: file, key: "tunnels.vps.identity", fix: "agent = true")
        let passphrase = try parseError("[tunnels.vps]\nhost = \"h\"\nuser = \"u\"\nagent = true\npassphrase = { env = \"P\" }\n")
        expectComplete(passphrase, code: .invalidValue, file: file, key: "tunnels.vps.passphrase", fix: "identity = ")
    }

    @Test("default_profile must name a profile")
    func unknownDefaultProfile() throws {
        let error = try parseError("default_profile = \"hom\"\n" + minimalOpenCode)
        expectComplete(error, code: .profileNotFound, file: file, key: "default_profile", fix: "one of: home",
                       problem: "did you mean \"home\"?")
    }

    @Test("keys with spaces or dots are quoted in the dotted path")
    func quotedKeyPaths() throws {
        let error = try parseError("[profiles.\"my home\"]\nbackend = \"opencode\"\nurl = 1\n")
        expectComplete(error, code: .wrongType, file: file, key: "profiles.\"my home\".url", fix: "write it as")
    }

    @Test("the error description is FILE: KEY: PROBLEM then the fix, and the exit code is 78")
    func descriptionFormat() {
        let error = ConfigError(.invalidValue, file: "/c.toml", key: "profiles.a.url", problem: "bad", fix: "fix it")
        #expect(error.description == "/c.toml: profiles.a.url: bad\n  fix: fix it")
        #expect(ConfigError.exitCode == 78)
        let bare = ConfigError(.configNotFound, file: nil, key: nil, problem: "p", fix: "f")
        #expect(bare.description == "p\n  fix: f")
    }
}
