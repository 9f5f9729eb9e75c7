@testable import TetherTestSupport
import Foundation
import Testing
@testable import TetherSSH

extension TetherSSHSuite {
@Suite("Units")
struct Units {
    @Test("fingerprints are printed like ssh-keygen's: SHA256: and unpadded base64")
    func fingerprintFormat() throws {
        let directory = try TestFiles.makeTemporaryDirectory("fingerprint")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Tools.generateKey(type: "ed25519", at: directory + "/key")
        let fields = try String(contentsOfFile: directory + "/key.pub", encoding: .utf8).split(separator: " ")
        let blob = [UInt8](try #require(Data(base64Encoded: String(fields[1]))))
        let key = HostKey(blob: blob)
        #expect(key.algorithm == "ssh-ed25519")
        #expect(key.fingerprint == (try Tools.fingerprint(ofPublicKey: directory + "/key.pub")))
    }

    @Test("private key files are classified without decrypting them")
    func privateKeyInspection() throws {
        let directory = try TestFiles.makeTemporaryDirectory("keys")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Tools.generateKey(type: "ed25519", at: directory + "/ed")
        try Tools.generateKey(type: "ecdsa", at: directory + "/ec", passphrase: "secret")
        let ed = try PrivateKeyFile(path: directory + "/ed")
        #expect(ed.algorithm == "ssh-ed25519")
        #expect(!ed.isEncrypted)
        let ec = try PrivateKeyFile(path: directory + "/ec")
        #expect(ec.algorithm == "ecdsa-sha2-nistp256")
        #expect(ec.isEncrypted)
        #expect(throws: PrivateKeyFile.Problem.self) { try PrivateKeyFile(path: directory + "/absent") }
    }

    @Test("reconnect backoff runs 1, 2, 5, 10, 30 s and stays at 30")
    func backoff() {
        var backoff = ReconnectBackoff()
        #expect((0..<7).map { _ in backoff.next() } == [1, 2, 5, 10, 30, 30, 30])
        backoff.reset()
        #expect(backoff.next() == 1)
    }

    @Test("the configuration never prints its passphrase and rejects what cannot work")
    func configuration() async throws {
        var configuration = SSHTunnel.Configuration(
            host: "vps.example.com", user: "me", identityPath: "/nonexistent/id_ed25519", passphrase: "hunter2",
            knownHostsPath: "/nonexistent/known_hosts", targetHost: "127.0.0.1", targetPort: 4096)
        #expect(!configuration.description.contains("hunter2"))
        #expect(configuration.description.contains("me@vps.example.com:22"))

        configuration.identityPath = nil
        let tunnel = SSHTunnel(configuration: configuration, logger: LogCapture().logger)
        await #expect {
            try await tunnel.start()
        } throws: { error in
            guard let error = error as? SSHError else { return false }
            return error.kind == .invalidConfiguration && error.message.contains("agent = true")
        }
    }

    @Test("an SSH server that is not running is a connection error")
    func connectionRefused() async throws {
        let (port, holder) = try TestSockets.refusingPort()
        defer { close(holder) }
        let configuration = SSHTunnel.Configuration(
            host: "127.0.0.1", port: port, user: "me", identityPath: "/tmp/none",
            knownHostsPath: "/nonexistent/known_hosts", targetHost: "127.0.0.1", targetPort: 1)
        let tunnel = SSHTunnel(configuration: configuration, logger: LogCapture().logger)
        await #expect {
            try await tunnel.start()
        } throws: { error in
            (error as? SSHError)?.kind == .connectFailed
        }
    }
}
}
