import Foundation
import Testing
@testable import TetherConfig
import TetherCore

@Suite("profiles list / profiles show rendering")
struct RedactionTests {
    static let secretValues = ["hunter2-literal", "env-secret-value", "file-secret-value", "passphrase-literal"]
    static let config = """
    default_profile = "home"

    [profiles.home]
    backend = "opencode"
    url = "http://127.0.0.1:4096"
    password = "hunter2-literal"
    tunnel = "vps"

    [profiles.worker]
    backend = "codex-worker"
    url = "https://worker.example.com"
    token = { env = "WORKER_TOKEN" }

    [profiles.monitor]
    backend = "codexmonitor"
    address = "10.0.0.5:4732"
    token = { file = "~/monitor.token" }

    [tunnels.vps]
    host = "vps.example.com"
    user = "me"
    identity = "/keys/id"
    passphrase = "passphrase-literal"
    """

    func load() throws -> (ConfigFile, ConfigEnvironment, Sandbox) {
        let box = try Sandbox()
        try box.write("home/monitor.token", "file-secret-value\n")
        let env = box.environment(["WORKER_TOKEN": "env-secret-value"])
        let file = try box.write("config.toml", Self.config, mode: 0o600)
        return (try ConfigFile.load(path: file, environment: env), env, box)
    }

    @Test("profile summaries: name, backend, endpoint, tunnel, default; JSON with snake_case keys")
    func summaries() throws {
        let (config, _, box) = try load()
        defer { box.cleanup() }
        let summaries = config.profileSummaries
        #expect(summaries == [
            ProfileSummary(name: "home", backend: .openCode, endpoint: "http://127.0.0.1:4096", tunnel: "vps", isDefault: true),
            ProfileSummary(name: "monitor", backend: .codexMonitor, endpoint: "10.0.0.5:4732", tunnel: nil, isDefault: false),
            ProfileSummary(name: "worker", backend: .codexWorker, endpoint: "https://worker.example.com", tunnel: nil,
                           isDefault: false),
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(summaries[1]), as: UTF8.self)
        #expect(json == #"{"backend":"codexmonitor","default":false,"endpoint":"10.0.0.5:4732","name":"monitor","tunnel":null}"#)
    }

    @Test("show: TOML text with secrets as references or a mask")
    func showText() throws {
        let (config, _, box) = try load()
        defer { box.cleanup() }
        let home = try config.redactedProfile(named: "home")
        #expect(home.toml == """
        [profiles.home]
        backend = "opencode"
        url = "http://127.0.0.1:4096"
        username = "opencode"
        password = "••••••"
        tunnel = "vps"

        [tunnels.vps]
        host = "vps.example.com"
        port = 22
        user = "me"
        identity = "/keys/id"
        passphrase = "••••••"
        agent = false
        known_hosts = "\(box.path("home/.ssh/known_hosts"))"
        trust_on_first_use = false
        keepalive = 30

        """)
        #expect(try config.redactedProfile(named: "worker").toml.contains("token = { env = \"WORKER_TOKEN\" }"))
        #expect(try config.redactedProfile(named: "monitor").toml.contains("token = { file = \"~/monitor.token\" }"))
    }

    @Test("show: JSON with snake_case keys and redacted secrets")
    func showJSON() throws {
        let (config, _, box) = try load()
        defer { box.cleanup() }
        let data = try JSONEncoder().encode(try config.redactedProfile(named: "home"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["name", "backend", "endpoint", "tunnel", "default", "settings", "tunnel_settings"])
        let settings = try #require(object["settings"] as? [String: Any])
        #expect(settings["password"] as? String == "••••••")
        #expect(settings["username"] as? String == "opencode")
        let tunnel = try #require(object["tunnel_settings"] as? [String: Any])
        #expect(tunnel["trust_on_first_use"] as? Bool == false)
        #expect(tunnel["known_hosts"] != nil)
        #expect(tunnel["port"] as? Int == 22)

        let worker = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(try config.redactedProfile(named: "worker")))
        let workerObject = try #require(worker as? [String: Any])
        #expect((workerObject["settings"] as? [String: Any])?["token"] as? [String: String] == ["env": "WORKER_TOKEN"])
        #expect(workerObject["tunnel_settings"] is NSNull)
        let monitor = try JSONEncoder().encode(try config.redactedProfile(named: "monitor"))
        #expect(String(decoding: monitor, as: UTF8.self).contains(#""token":{"file":"~\/monitor.token"}"#))
    }

    @Test("no rendering ever contains a secret value, though every secret resolves")
    func neverLeaks() throws {
        let (config, env, box) = try load()
        defer { box.cleanup() }
        // The secrets are real and resolvable…
        let resolved = try config.allSecrets.map { try $0.resolve(env) }
        #expect(Set(resolved) == Set(Self.secretValues))
        // …and appear in no rendering.
        var renderings: [String] = []
        for name in config.profileNames {
            let profile = try config.profile(named: name)
            let redacted = try config.redactedProfile(named: name)
            var dumped = ""
            dump(profile, to: &dumped)
            renderings += [
                redacted.toml, String(decoding: try JSONEncoder().encode(redacted), as: UTF8.self),
                "\(profile)", String(reflecting: profile), dumped, "\(profile.settings)",
            ]
        }
        renderings.append(String(decoding: try JSONEncoder().encode(config.profileSummaries), as: UTF8.self))
        for tunnel in config.tunnels.values { renderings += ["\(tunnel)", String(reflecting: tunnel)] }
        for text in renderings {
            for secret in Self.secretValues {
                #expect(!text.contains(secret), "secret leaked into: \(text)")
            }
        }
    }

    @Test("TOML quoting in the rendering")
    func quoting() {
        #expect(TOMLText.quoted("a\"b\\c\nd\u{1}") == #""a\"b\\c\nd\u0001""#)
        #expect(TOMLText.path(["profiles", "my home", "url"]) == #"profiles."my home".url"#)
        #expect(TOMLText.key("home-opencode_2") == "home-opencode_2")
    }
}
