import Foundation
import Testing
@testable import TetherConfig

@Suite("Secrets: references, lazy resolution, literal permissions")
struct SecretTests {
    @Test("{ env = NAME } resolves from the injected environment")
    func environmentSecret() throws {
        let secret = ConfiguredSecret(reference: .environment("OC_PASS"), key: "profiles.home.password", file: "/c.toml")
        let env = ConfigEnvironment(variables: ["OC_PASS": "s3cret"], homeDirectory: "/home/me")
        #expect(try secret.resolve(env) == "s3cret")
    }

    @Test("a missing or empty env var names the key, the variable and what to do")
    func missingEnvironmentSecret() throws {
        let secret = ConfiguredSecret(reference: .environment("OC_PASS"), key: "profiles.home.password", file: "/c.toml")
        let unset = try #require(throws: ConfigError.self) {
            try secret.resolve(ConfigEnvironment(homeDirectory: "/home/me"))
        }
        expectComplete(unset, code: .secretUnavailable, file: "/c.toml", key: "profiles.home.password",
                       fix: "export OC_PASS=", problem: "OC_PASS is not set")
        let empty = try #require(throws: ConfigError.self) {
            try secret.resolve(ConfigEnvironment(variables: ["OC_PASS": ""], homeDirectory: "/home/me"))
        }
        expectComplete(empty, code: .secretUnavailable, file: "/c.toml", key: "profiles.home.password",
                       fix: "export OC_PASS", problem: "is empty")
    }

    @Test("{ file = PATH } expands ~ and trims trailing newlines only")
    func fileSecret() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        try box.write("home/.config/tether/oc.pass", "  pass word \r\n\n")
        let env = box.environment()
        #expect(try SecretReference.file("~/.config/tether/oc.pass").resolve(env) == "  pass word ")
        #expect(try SecretReference.file(box.path("home/.config/tether/oc.pass")).resolve(env) == "  pass word ")
    }

    @Test("an unreadable or empty secret file names the key, the path and what to do")
    func unreadableFileSecret() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let env = box.environment()
        let missing = ConfiguredSecret(reference: .file("~/nope.token"), key: "profiles.w.token", file: "/c.toml")
        let error = try #require(throws: ConfigError.self) { try missing.resolve(env) }
        expectComplete(error, code: .secretUnavailable, file: "/c.toml", key: "profiles.w.token",
                       fix: "put the secret in \(box.path("home/nope.token"))", problem: "No such file or directory")

        try box.write("home/empty.token", "\n")
        let empty = ConfiguredSecret(reference: .file("~/empty.token"), key: "profiles.w.token", file: "/c.toml")
        let emptyError = try #require(throws: ConfigError.self) { try empty.resolve(env) }
        expectComplete(emptyError, code: .secretUnavailable, file: "/c.toml", key: "profiles.w.token",
                       fix: "write the secret into", problem: "is empty")
    }

    @Test("a relative secret file is anchored at the config file's directory")
    func relativeSecretFile() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        try box.write("conf/worker.token", "tok\n")
        let file = try box.write("conf/config.toml", """
        [profiles.w]
        backend = "codex-worker"
        url = "http://127.0.0.1:8787"
        token = { file = "worker.token" }
        """)
        let config = try ConfigFile.load(path: file, environment: box.environment())
        let token = try #require(config.profiles["w"]?.secrets.first)
        #expect(token.reference == .file(box.path("conf/worker.token")))
        #expect(try token.resolve(box.environment()) == "tok")
    }

    @Test("secrets resolve lazily: loading never reads them, and other profiles' gaps don't matter")
    func lazyResolution() throws {
        let config = try parse("""
        [profiles.a]
        backend = "codex-worker"
        url = "http://a:1"
        token = { env = "A_TOKEN" }

        [profiles.b]
        backend = "codex-worker"
        url = "http://b:1"
        token = { file = "/definitely/not/here" }
        """)
        let env = ConfigEnvironment(variables: ["A_TOKEN": "alpha"], homeDirectory: "/home/me")
        let a = try config.profile(named: "a")
        #expect(try a.secrets.map { try $0.resolve(env) } == ["alpha"])
    }

    static let literalConfig = """
    [profiles.home]
    backend = "opencode"
    url = "http://127.0.0.1:4096"
    password = "hunter2"
    """

    @Test("a literal secret in a 0644 file is refused; 0600 is accepted", arguments: [0o644, 0o640, 0o604, 0o660])
    func literalPermissions(mode: Int) throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let open = try box.write("open.toml", Self.literalConfig, mode: mode)
        let error = try #require(throws: ConfigError.self) { try ConfigFile.load(path: open, environment: box.environment()) }
        expectComplete(error, code: .insecureLiteralSecret, file: open, key: "profiles.home.password",
                       fix: "chmod 600 \(open)", problem: "group or others can read")
        #expect(error.fix.contains("{ env = "))
        #expect(!error.description.contains("hunter2"))

        let closed = try box.write("closed.toml", Self.literalConfig, mode: 0o600)
        let config = try ConfigFile.load(path: closed, environment: box.environment())
        #expect(try config.profile(named: "home").secrets.first?.resolve(box.environment()) == "hunter2")
    }

    @Test("references in a world-readable file are fine; a literal tunnel passphrase is not")
    func referencesAndPassphrase() throws {
        let box = try Sandbox()
        defer { box.cleanup() }
        let references = try box.write("refs.toml", minimalOpenCode + "\npassword = { env = \"P\" }\n", mode: 0o644)
        #expect(try ConfigFile.load(path: references, environment: box.environment()).profiles.count == 1)

        let passphrase = try box.write("tunnel.toml", """
        [tunnels.vps]
        host = "h"
        user = "u"
        identity = "~/.ssh/id_ed25519"
        passphrase = "open sesame"
        """, mode: 0o644)
        let error = try #require(throws: ConfigError.self) {
            try ConfigFile.load(path: passphrase, environment: box.environment())
        }
        expectComplete(error, code: .insecureLiteralSecret, file: passphrase, key: "tunnels.vps.passphrase",
                       fix: "chmod 600")
    }

    @Test("parsing text not read from a file (fileMode nil) skips the permission check")
    func noModeNoCheck() throws {
        #expect(try parse(Self.literalConfig, mode: nil).profiles.count == 1)
    }

    @Test("a SecretReference never shows a literal in description, debugDescription or dump")
    func referenceIsRedacted() {
        let secret = SecretReference.literal("hunter2")
        var dumped = ""
        dump(secret, to: &dumped)
        for text in ["\(secret)", String(reflecting: secret), dumped, secret.redacted] {
            #expect(!text.contains("hunter2"), "leaked: \(text)")
        }
        #expect(secret.redacted == "\"••••••\"")
        #expect(SecretReference.environment("X").redacted == "{ env = \"X\" }")
        #expect(SecretReference.file("~/p").redacted == "{ file = \"~/p\" }")
    }
}
