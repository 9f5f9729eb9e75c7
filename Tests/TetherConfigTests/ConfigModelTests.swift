import Foundation
import Testing
@testable import TetherConfig
import TetherCore

@Suite("Parsing the typed model")
struct ConfigModelTests {
    static let full = """
    default_profile = "home"

    [profiles.home]
    backend = "opencode"
    url = "https://oc.example.com:4096/"
    password = { env = "OC_PASS" }
    directory = "/srv/project"
    tunnel = "vps"

    [profiles.worker]
    backend = "codex-worker"
    url = "http://127.0.0.1:8787"
    token = { file = "~/.config/tether/worker.token" }

    [profiles.monitor]
    backend = "codexmonitor"
    address = "[::1]:4732"
    workspace = "ws-1"

    [profiles.notify]
    backend = "notification"
    url = "wss://signaling.example.com"
    desktop = "did:key:desktop"

    [tunnels.vps]
    host = "vps.example.com"
    user = "me"
    identity = "keys/id_ed25519"
    passphrase = { env = "SSH_PASS" }
    local_port = 14096
    """

    @Test("every backend's settings come out typed, with defaults filled in")
    func typedModel() throws {
        let config = try parse(Self.full, path: "/etc/tether/config.toml")
        #expect(config.path == "/etc/tether/config.toml")
        #expect(config.defaultProfile == "home")
        #expect(config.profileNames == ["home", "monitor", "notify", "worker"])

        let home = try #require(config.profiles["home"])
        #expect(home.backend == .openCode)
        #expect(home.tunnel == "vps")
        guard case .openCode(let openCode) = home.settings else { Issue.record("not opencode"); return }
        #expect(openCode.url.absoluteString == "https://oc.example.com:4096/")
        #expect(openCode.username == "opencode")
        #expect(openCode.password?.reference == .environment("OC_PASS"))
        #expect(openCode.password?.key == "profiles.home.password")
        #expect(openCode.directory == "/srv/project")

        guard case .codexWorker(let worker) = try #require(config.profiles["worker"]).settings else {
            Issue.record("not codex-worker"); return
        }
        #expect(worker.url.port == 8787)
        #expect(worker.token?.reference == .file("~/.config/tether/worker.token"))

        let monitorProfile = try #require(config.profiles["monitor"])
        guard case .codexMonitor(let monitor) = monitorProfile.settings else { Issue.record("not codexmonitor"); return }
        #expect(monitor.address == HostPort(host: "::1", port: 4732))
        #expect(monitor.token == nil)
        #expect(monitor.workspace == "ws-1")
        #expect(monitorProfile.endpoint == "[::1]:4732")
        #expect(monitorProfile.tunnel == nil)

        guard case .notification(let notify) = try #require(config.profiles["notify"]).settings else {
            Issue.record("not notification"); return
        }
        #expect(notify.url.scheme == "wss")
        #expect(notify.peerID == nil)
        #expect(notify.desktop == "did:key:desktop")

        let tunnel = try #require(config.tunnel(for: home))
        #expect(tunnel.host == "vps.example.com")
        #expect(tunnel.port == 22)
        #expect(tunnel.user == "me")
        #expect(tunnel.identity == "/etc/tether/keys/id_ed25519") // relative → the config file's directory
        #expect(tunnel.passphrase?.reference == .environment("SSH_PASS"))
        #expect(tunnel.agent == false)
        #expect(tunnel.knownHosts == "/home/me/.ssh/known_hosts")
        #expect(tunnel.trustOnFirstUse == false)
        #expect(tunnel.localPort == 14096)
        #expect(tunnel.keepalive == 30)
    }

    @Test("tunnel: agent-only auth, explicit port, known_hosts with ~, TOFU opt-in, keepalive 0")
    func tunnelOptions() throws {
        let config = try parse(minimalOpenCode + """

        tunnel = "jump"

        [tunnels.jump]
        host = "10.0.0.1"
        port = 2222
        user = "ops"
        agent = true
        known_hosts = "~/hosts"
        trust_on_first_use = true
        keepalive = 0
        """)
        let tunnel = try #require(config.tunnels["jump"])
        #expect(tunnel.port == 2222)
        #expect(tunnel.identity == nil)
        #expect(tunnel.agent)
        #expect(tunnel.knownHosts == "/home/me/hosts")
        #expect(tunnel.trustOnFirstUse)
        #expect(tunnel.keepalive == 0)
    }

    @Test("host:port addresses", arguments: [
        ("127.0.0.1:4732", "127.0.0.1", 4732), ("box.lan:1", "box.lan", 1), ("[fe80::1]:65535", "fe80::1", 65535),
    ])
    func addresses(text: String, host: String, port: Int) {
        #expect(HostPort(parsing: text) == HostPort(host: host, port: port))
    }

    @Test("malformed addresses", arguments: ["127.0.0.1", "host:", ":4732", "host:0", "host:65536", "host:12ab",
                                             "::1:4732", "[::1]4732", "ho st:80", "host:+80", "[]:80", "a]b:80", "host:８０"])
    func badAddresses(text: String) {
        #expect(HostPort(parsing: text) == nil)
    }

    /// An HTTP `Host` header: the port may be left out, and is then the scheme's.
    @Test("authorities") func authorities() {
        #expect(HostPort(authority: "localhost", defaultPort: 80) == HostPort(host: "localhost", port: 80))
        #expect(HostPort(authority: "[::1]", defaultPort: 443) == HostPort(host: "::1", port: 443))
        #expect(HostPort(authority: "[::1]:7420", defaultPort: 80) == HostPort(host: "::1", port: 7420))
        #expect(HostPort(authority: "box.lan:8080", defaultPort: nil) == HostPort(host: "box.lan", port: 8080))
        #expect(HostPort(authority: "box.lan", defaultPort: nil) == nil)
        #expect(HostPort(authority: "localhost:", defaultPort: 80) == HostPort(host: "localhost", port: 80))
        #expect(HostPort(authority: "[::1]:", defaultPort: 80) == HostPort(host: "::1", port: 80))
        for text in ["", ":", "host:x", "::1", "[::1", "host:0", "a b", "host:80:80", "host::"] {
            #expect(HostPort(authority: text, defaultPort: 80) == nil, "\(text)")
        }
    }

    @Test("an empty file parses to an empty config")
    func emptyFile() throws {
        let config = try parse("# nothing yet\n")
        #expect(config.profiles.isEmpty)
        #expect(config.tunnels.isEmpty)
        #expect(config.defaultProfile == nil)
    }
}
