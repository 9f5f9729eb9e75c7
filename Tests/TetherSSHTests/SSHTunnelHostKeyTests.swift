@testable import TetherTestSupport
import Foundation
import Testing
import TetherSSH

extension TetherSSHSuite {
    @Suite("Host keys")
    struct HostKeys {
        @Test("an unknown host is refused with its SHA256 fingerprint and how to trust it")
        func unknownHostRefused() async throws {
            let fixture = try TunnelFixture(trustServer: false)
            let error = try #require(await fixture.startFailure(fixture.configuration()))
            #expect(error.kind == .hostKeyUnknown)
            let fingerprint = try fixture.server.hostKeyFingerprint()
            #expect(fingerprint.hasPrefix("SHA256:"))
            #expect(error.message.contains(fingerprint))
            #expect(error.message.contains("known_hosts"))
            #expect(error.message.contains("trust_on_first_use = true"))
            // Nothing was pinned without TOFU.
            #expect(!FileManager.default.fileExists(atPath: fixture.pinStorePath))
        }

        @Test("trust on first use pins the key, accepts it again, then refuses a changed key")
        func trustOnFirstUse() async throws {
            let fixture = try TunnelFixture(trustServer: false)
            let configuration = fixture.configuration(trustOnFirstUse: true)
            let original = try fixture.server.hostKeyFingerprint()

            let first = fixture.tunnel(configuration)
            let endpoint = try await first.start()
            let reply = try await offPool { try TestSockets.roundTrip(port: endpoint.port, payload: [1, 2, 3]) }
            #expect(reply == [1, 2, 3])
            first.stop()
            let pins = try String(contentsOfFile: fixture.pinStorePath, encoding: .utf8)
            #expect(pins.hasPrefix("[127.0.0.1]:\(fixture.server.port) ssh-ed25519 "))
            #expect(fixture.logs.contains("pinned its host key"))

            let second = fixture.tunnel(configuration)
            _ = try await second.start()
            second.stop()

            fixture.server.stop()
            try fixture.server.regenerateHostKey()
            try fixture.server.start()
            let changed = try fixture.server.hostKeyFingerprint()
            let error = try #require(await fixture.startFailure(configuration))
            #expect(error.kind == .hostKeyMismatch)
            #expect(error.message.contains(original))
            #expect(error.message.contains(changed))
            // The pin was not replaced.
            #expect(try String(contentsOfFile: fixture.pinStorePath, encoding: .utf8) == pins)
        }

        @Test("a known_hosts mismatch is fatal and names both fingerprints")
        func knownHostsMismatch() async throws {
            let fixture = try TunnelFixture(trustServer: false)
            let impostor = fixture.directory + "/impostor"
            try Tools.generateKey(type: "ed25519", at: impostor)
            let fields = try String(contentsOfFile: impostor + ".pub", encoding: .utf8).split(separator: " ")
            try fixture.writeKnownHosts(["[127.0.0.1]:\(fixture.server.port) \(fields[0]) \(fields[1])"])

            // Even trust on first use does not override a recorded key.
            let error = try #require(await fixture.startFailure(fixture.configuration(trustOnFirstUse: true)))
            #expect(error.kind == .hostKeyMismatch)
            #expect(error.message.contains("MISMATCH"))
            #expect(error.message.contains(try Tools.fingerprint(ofPublicKey: impostor + ".pub")))
            #expect(error.message.contains(try fixture.server.hostKeyFingerprint()))
            #expect(!FileManager.default.fileExists(atPath: fixture.pinStorePath))
        }

        @Test("a hashed known_hosts entry (|1|salt|hash) is accepted")
        func hashedEntry() async throws {
            let fixture = try TunnelFixture()
            try Tools.run("/usr/bin/ssh-keygen", ["-q", "-H", "-f", fixture.knownHostsPath])
            let hashed = try String(contentsOfFile: fixture.knownHostsPath, encoding: .utf8)
            #expect(hashed.hasPrefix("|1|"))
            #expect(!hashed.contains("127.0.0.1"))

            let tunnel = fixture.tunnel()
            defer { tunnel.stop() }
            let endpoint = try await tunnel.start()
            let reply = try await offPool { try TestSockets.roundTrip(port: endpoint.port, payload: Array("hashed".utf8)) }
            #expect(reply == Array("hashed".utf8))
        }

        @Test("a [127.0.0.1]:PORT entry is used for a non-22 port; a bare 127.0.0.1 entry is not (as in OpenSSH)")
        func bracketedPortEntry() async throws {
            let fixture = try TunnelFixture()
            try fixture.writeKnownHosts(["# comment", "", try fixture.server.knownHostsLine(name: "127.0.0.1")])
            let error = try #require(await fixture.startFailure(fixture.configuration()))
            #expect(error.kind == .hostKeyUnknown)

            try fixture.writeKnownHosts([
                "@cert-authority *.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
                try fixture.server.knownHostsLine(name: "otherhost,[127.0.0.1]:\(fixture.server.port)"),
            ])
            let tunnel = fixture.tunnel()
            defer { tunnel.stop() }
            let endpoint = try await tunnel.start()
            let reply = try await offPool { try TestSockets.roundTrip(port: endpoint.port, payload: Array("port".utf8)) }
            #expect(reply == Array("port".utf8))
        }

        @Test("the host key type recorded in known_hosts is the one negotiated (libssh2 alone would pick ecdsa)",
              arguments: ["ed25519", "ecdsa"])
        func recordedKeyTypeIsNegotiated(type: String) async throws {
            let fixture = try TunnelFixture(extraHostKeyTypes: ["ecdsa"])
            try fixture.writeKnownHosts([try fixture.server.knownHostsLine(type: type)])
            let tunnel = fixture.tunnel()
            defer { tunnel.stop() }
            let endpoint = try await tunnel.start()
            let reply = try await offPool { try TestSockets.roundTrip(port: endpoint.port, payload: Array(type.utf8)) }
            #expect(reply == Array(type.utf8))
        }

        @Test("a host key marked @revoked is refused")
        func revokedKey() async throws {
            let fixture = try TunnelFixture()
            let line = try fixture.server.knownHostsLine()
            try fixture.writeKnownHosts([line, "@revoked * " + line.split(separator: " ").dropFirst().joined(separator: " ")])
            let error = try #require(await fixture.startFailure(fixture.configuration()))
            #expect(error.kind == .hostKeyRevoked)
        }
    }
}
