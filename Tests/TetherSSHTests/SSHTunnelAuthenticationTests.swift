@testable import TetherTestSupport
import Foundation
import Testing
import TetherSSH

extension TetherSSHSuite {
    @Suite("Authentication")
    struct Authentication {
        @Test("an ed25519 identity file authenticates and forwards to the target")
        func ed25519Identity() async throws {
            let fixture = try TunnelFixture()
            let tunnel = fixture.tunnel()
            let endpoint = try await tunnel.start()
            #expect(endpoint.host == "127.0.0.1")
            #expect(tunnel.localEndpoint?.port == endpoint.port)

            let reply = try await offPool { try TestSockets.roundTrip(port: endpoint.port, payload: Array("hello through ssh".utf8)) }
            #expect(String(decoding: reply, as: UTF8.self) == "hello through ssh")
            #expect(fixture.logs.contains("SSH tunnel established"))

            tunnel.stop()
            #expect(tunnel.localEndpoint == nil)
            // The listener is gone with the tunnel.
            #expect(throws: (any Error).self) { try TestSockets.connect(port: endpoint.port) }
        }

        @Test("an encrypted ecdsa identity authenticates with its passphrase")
        func ecdsaIdentityWithPassphrase() async throws {
            let fixture = try TunnelFixture(keyType: "ecdsa", passphrase: "correct horse")
            let tunnel = fixture.tunnel(fixture.configuration(passphrase: "correct horse"))
            defer { tunnel.stop() }
            let endpoint = try await tunnel.start()
            let reply = try await offPool { try TestSockets.roundTrip(port: endpoint.port, payload: Array("ecdsa".utf8)) }
            #expect(reply == Array("ecdsa".utf8))
        }

        @Test("an encrypted identity without its passphrase is refused with a hint, and a wrong one never leaks")
        func missingOrWrongPassphrase() async throws {
            let fixture = try TunnelFixture(keyType: "ecdsa", passphrase: "correct horse")

            let missing = try #require(await fixture.startFailure(fixture.configuration()))
            #expect(missing.kind == .invalidConfiguration)
            #expect(missing.message.contains("is encrypted"))

            let wrong = try #require(await fixture.startFailure(fixture.configuration(passphrase: "battery staple")))
            #expect(wrong.kind == .authenticationFailed)
            #expect(!wrong.message.contains("battery staple"))
            #expect(!fixture.logs.text.contains("battery staple"))
        }

        @Test("the SSH agent's key authenticates")
        func agentAuthentication() async throws {
            let fixture = try TunnelFixture()
            let agent = try SSHAgentFixture()
            try agent.add(fixture.keyPath)
            let tunnel = fixture.tunnel(fixture.configuration(useAgent: true, agentSocket: agent.socketPath))
            defer { tunnel.stop() }
            let endpoint = try await tunnel.start()
            let reply = try await offPool { try TestSockets.roundTrip(port: endpoint.port, payload: Array("agent".utf8)) }
            #expect(reply == Array("agent".utf8))
            #expect(fixture.logs.contains("authenticated with an agent key"))
        }

        @Test("an RSA key refused by the server explains libssh2 1.10's RSA SHA-2 limit")
        func rsaKeyExplained() async throws {
            let fixture = try TunnelFixture(keyType: "rsa")
            let error = try #require(await fixture.startFailure(fixture.configuration()))
            #expect(error.kind == .authenticationFailed)
            #expect(error.message.contains("libssh2 1.10"))
            #expect(error.message.contains("RSA SHA-2"))
            #expect(error.message.contains("ed25519"))
        }

        @Test("a missing identity file is a configuration error naming the file")
        func missingIdentity() async throws {
            let fixture = try TunnelFixture()
            let error = try #require(await fixture.startFailure(fixture.configuration(identity: fixture.directory + "/nope")))
            #expect(error.kind == .invalidConfiguration)
            #expect(error.message.contains("/nope"))
        }

        @Test("a key the server does not know is refused as authentication failure")
        func unknownKeyRefused() async throws {
            let fixture = try TunnelFixture()
            let stranger = fixture.directory + "/id_stranger"
            try Tools.generateKey(type: "ed25519", at: stranger)
            let error = try #require(await fixture.startFailure(fixture.configuration(identity: stranger)))
            #expect(error.kind == .authenticationFailed)
            #expect(error.message.contains("authorized_keys"))
            #expect(!error.message.contains("RSA"))
        }
    }
}
