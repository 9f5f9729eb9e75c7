import Foundation
import Testing
import TetherCore
@testable import TetherConfig

@Suite("[serve] table")
struct ServeSettingsTests {
    func parse(_ text: String, _ variables: [String: String] = [:]) throws -> ConfigFile {
        try ConfigFile.parse(text, path: "/home/me/.config/tether/config.toml", fileMode: 0o600,
                             environment: ConfigEnvironment(variables: variables, homeDirectory: "/home/me"))
    }

    @Test func everyKeyParses() throws {
        let config = try parse("""
            [serve]
            listen = "0.0.0.0:7420"
            db = "~/gw.sqlite"
            retain_days = 0.5
            tokens = [{ env = "GW_TOKEN" }, { file = "serve.token" }]
            notify = { url = "https://ntfy.example/topic" }
            public_url = "https://gw.example"
            """)
        let serve = try #require(config.serve)
        #expect(serve.listen == HostPort(host: "0.0.0.0", port: 7420))
        #expect(serve.db == "/home/me/gw.sqlite")
        #expect(serve.retainDays == 0.5)
        #expect(serve.tokens.map(\.reference) == [.environment("GW_TOKEN"), .file("/home/me/.config/tether/serve.token")])
        #expect(serve.notifyURL?.absoluteString == "https://ntfy.example/topic")
        #expect(serve.publicURL?.host == "gw.example")
        #expect(config.allSecrets.count == 2)
        #expect(try serve.tokens[0].resolve(ConfigEnvironment(variables: ["GW_TOKEN": "t"], homeDirectory: "/h")) == "t")
    }

    /// `listen` in the file and `--listen` on the command line read addresses the same way
    /// (`HostPort(listening:)`): `:7420` worked as a flag and was refused in the file.
    @Test("listen accepts what --listen accepts", arguments: [
        (":7420", "127.0.0.1", 7420), ("0.0.0.0:0", "0.0.0.0", 0), ("[::1]:7420", "::1", 7420), ("box.lan:80", "box.lan", 80),
    ])
    func listenAddresses(text: String, host: String, port: Int) throws {
        let serve = try #require(try parse("[serve]\nlisten = \"\(text)\"").serve)
        #expect(serve.listen == HostPort(host: host, port: port))
        #expect(HostPort(listening: text) == serve.listen)
    }

    @Test("listen refuses what --listen refuses", arguments: ["7420", "host:", "host:65536", "host:+80", "ho st:80",
                                                              "::1:7420", "[::1]7420", "[]:80", "a]b:80"])
    func badListenAddresses(text: String) throws {
        #expect(HostPort(listening: text) == nil)
        let error = #expect(throws: ConfigError.self) { try parse("[serve]\nlisten = \"\(text)\"") }
        #expect(error?.description.contains("is not HOST:PORT") == true)
    }

    @Test func mistakesAreNamed() throws {
        #expect(try parse("").serve == nil)
        let unknown = #expect(throws: ConfigError.self) { try parse("[serve]\nlisten_on = \"x\"") }
        #expect(unknown?.description.contains("listen") == true)
        #expect(throws: ConfigError.self) { try parse("[serve]\nlisten = \"nowhere\"") }
        #expect(throws: ConfigError.self) { try parse("[serve]\ntokens = \"one\"") }
        #expect(throws: ConfigError.self) { try parse("[serve]\nretain_days = -1") }
        #expect(throws: ConfigError.self) { try parse("[serve]\nnotify = {}") }
        // A literal token in a file others can read is refused, like every literal secret.
        #expect(throws: ConfigError.self) {
            try ConfigFile.parse("[serve]\ntokens = [\"s3cret\"]", path: "/c.toml", fileMode: 0o644,
                                 environment: ConfigEnvironment(variables: [:], homeDirectory: "/h"))
        }
    }

    /// `db` names a fleet's PostgreSQL as a URL (kept as written, not made a path); its password
    /// is a secret: `db_password`, or the URL's own — a literal, refused in a file others can read.
    @Test func aPostgresDatabaseAndItsPasswordAreSecrets() throws {
        let byEnvironment = try #require(try parse("""
            [serve]
            db = "postgres://tether@db.example:5432/tether"
            db_password = { env = "TETHER_DB_PASSWORD" }
            """).serve)
        #expect(byEnvironment.db == "postgres://tether@db.example:5432/tether")
        #expect(byEnvironment.dbPassword?.reference == .environment("TETHER_DB_PASSWORD"))
        #expect(try byEnvironment.dbPassword?.resolve(ConfigEnvironment(variables: ["TETHER_DB_PASSWORD": "pw"], homeDirectory: "/h")) == "pw")

        let inURL = try parse("[serve]\ndb = \"postgresql://tether:p%40ss@db.example/tether\"\n")
        #expect(inURL.serve?.dbPassword?.reference == .literal("p@ss"))
        #expect(inURL.allSecrets.contains { $0.key == "serve.db" })
        #expect(throws: ConfigError.self) {
            try ConfigFile.parse("[serve]\ndb = \"postgres://tether:pw@db.example/tether\"\n", path: "/home/me/.config/tether/config.toml",
                                 fileMode: 0o644, environment: ConfigEnvironment(variables: [:], homeDirectory: "/home/me"))
        }
    }
}
