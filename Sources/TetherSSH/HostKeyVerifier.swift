import CLibSSH2
import Foundation
import Logging

/// Checks the server's host key the way OpenSSH does with StrictHostKeyChecking=yes, plus an
/// opt-in trust-on-first-use pin store:
/// known_hosts match → ok; known_hosts mismatch → fatal; otherwise the pin store decides
/// (match → ok, mismatch → fatal); a key in neither is refused unless TOFU pins it.
final class HostKeyVerifier {
    private let configuration: SSHTunnel.Configuration
    private let logger: Logger
    private let knownHosts: KnownHostsFile
    private let pins: KnownHostsFile?
    /// The name OpenSSH records: `host` on port 22, `[host]:port` otherwise.
    let lookupName: String

    init(session: SSHSession, configuration: SSHTunnel.Configuration, logger: Logger) throws(SSHError) {
        self.configuration = configuration
        self.logger = logger
        let host = configuration.host.lowercased()
        lookupName = configuration.port == 22 ? host : "[\(host)]:\(configuration.port)"
        knownHosts = try KnownHostsFile(session: session, path: configuration.knownHostsPath,
                                        role: "known_hosts file", logger: logger)
        if let pinPath = configuration.pinStorePath {
            pins = try KnownHostsFile(session: session, path: pinPath, role: "host key pin store", logger: logger)
        } else {
            pins = nil
        }
    }

    /// Host key algorithms to offer, types already recorded for this host first: libssh2 would
    /// otherwise pick ecdsa over an ed25519 key the user's known_hosts holds (OpenSSH orders them
    /// the same way).
    func preferredAlgorithms() -> [String] {
        let stores = [knownHosts] + (pins.map { [$0] } ?? [])
        let known = HostKey.supportedAlgorithms.filter { algorithm in
            stores.contains { $0.hasKey(for: lookupName, algorithm: algorithm) }
        }
        return known + HostKey.supportedAlgorithms.filter { !known.contains($0) }
    }

    func verify(_ session: SSHSession) throws(SSHError) {
        var length = 0
        var type: Int32 = 0
        guard let pointer = libssh2_session_hostkey(session.raw, &length, &type), length > 0 else {
            throw SSHError(.handshakeFailed, "the SSH server \(lookupName) sent no host key")
        }
        let key = HostKey(blob: pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        })

        let stores = [knownHosts] + (pins.map { [$0] } ?? [])
        if stores.contains(where: { $0.revokedBlobs.contains(key.blob) }) {
            throw SSHError(.hostKeyRevoked,
                           "the SSH host key of \(lookupName) (\(key.summary)) is marked @revoked in \(configuration.knownHostsPath); refusing to connect. Ask the server's administrator for its new host key")
        }

        switch knownHosts.check(name: lookupName, key: key) {
        case .match:
            logger.debug("host key matches known_hosts", metadata: ["key": "\(key.summary)"])
            return
        case .mismatch(let recorded):
            throw mismatch(key, recorded, in: knownHosts.path)
        case .notFound:
            break
        }

        if let pins {
            switch pins.check(name: lookupName, key: key) {
            case .match:
                logger.debug("host key matches the pinned key", metadata: ["key": "\(key.summary)"])
                return
            case .mismatch(let recorded):
                throw mismatch(key, recorded, in: pins.path)
            case .notFound:
                break
            }
        }

        // A key of another type on record: the server stopped offering the recorded type. That
        // is a downgrade OpenSSH also refuses to decide silently, so never pin it.
        if let other = stores.lazy.compactMap({ $0.anyRecord(for: self.lookupName) }).first {
            throw SSHError(.hostKeyUnknown,
                           "the SSH server \(lookupName) presented a \(key.algorithm) host key \(key.fingerprint), but only a \(other.algorithm) key (\(other.fingerprint)) is recorded for it. Confirm the new key with the server's administrator, then add it to \(configuration.knownHostsPath) (e.g. `ssh-keyscan \(keyscanArguments(key)) >> \(configuration.knownHostsPath)`)")
        }

        if configuration.trustOnFirstUse, let pins {
            try pin(key, into: pins.path)
            logger.notice("trusting the SSH server on first use: pinned its host key",
                          metadata: ["host": "\(lookupName)", "key": "\(key.summary)", "pins": "\(pins.path)"])
            return
        }

        let where_ = pins.map { "in neither \(configuration.knownHostsPath) nor the pin store \($0.path)" }
            ?? "not in \(configuration.knownHostsPath)"
        throw SSHError(.hostKeyUnknown,
                       "the SSH server \(lookupName) is not known: its \(key.algorithm) host key \(key.fingerprint) is \(where_). Check that fingerprint with the server's administrator (on the server: ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), then trust it by adding it to known_hosts (`ssh-keyscan \(keyscanArguments(key)) >> \(configuration.knownHostsPath)`, or connect once with ssh), or set trust_on_first_use = true in this tunnel to pin it on first connection")
    }

    private func mismatch(_ key: HostKey, _ recorded: KnownHostsFile.HostKeyRecord, in path: String) -> SSHError {
        SSHError(.hostKeyMismatch,
                 "HOST KEY MISMATCH for \(lookupName): \(path) records \(recorded.algorithm) \(recorded.fingerprint), but the server presented \(key.algorithm) \(key.fingerprint). Someone may be intercepting the connection (man-in-the-middle), or the server's host key was replaced; refusing to connect. If the change is expected, remove the old entry with `ssh-keygen -R '\(lookupName)' -f \(path)` and trust the new key")
    }

    private func keyscanArguments(_ key: HostKey) -> String {
        let type = key.algorithm.hasPrefix("ecdsa") ? "ecdsa" : key.algorithm.replacingOccurrences(of: "ssh-", with: "")
        let port = configuration.port == 22 ? "" : "-p \(configuration.port) "
        return "\(port)-t \(type) \(configuration.host)"
    }

    /// Appends one known_hosts line to the pin store (0600, in a 0700 directory).
    private func pin(_ key: HostKey, into path: String) throws(SSHError) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
        }
        let line = "\(lookupName) \(key.algorithm) \(key.base64)\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw SSHError(.invalidConfiguration, "could not write the host key pin store \(path): \(SocketIO.errnoText())")
        }
        defer { SocketIO.closeDescriptor(fd) }
        let written = line.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
        guard written == line.utf8.count else {
            throw SSHError(.invalidConfiguration, "could not write the host key pin store \(path): \(SocketIO.errnoText())")
        }
    }
}
