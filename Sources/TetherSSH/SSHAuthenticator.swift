import CLibSSH2
import Foundation
import Logging

/// Public-key authentication: the agent's keys first (when enabled), then the identity file.
struct SSHAuthenticator {
    let configuration: SSHTunnel.Configuration
    let logger: Logger

    /// What was tried, for the final error message.
    private struct Attempt {
        let description: String
        let isRSA: Bool
    }

    static let rsaExplanation = "RSA keys cannot work here: Debian 12's libssh2 1.10 can only sign with ssh-rsa (RSA with SHA-1), which OpenSSH 8.8 and later refuse by default, and it cannot sign with RSA SHA-2 (rsa-sha2-256/512). Use an ed25519 key instead: `ssh-keygen -t ed25519`, then add the new .pub to the server's authorized_keys"

    func authenticate(_ session: SSHSession, deadline: ContinuousClock.Instant) throws(SSHError) {
        let user = configuration.user
        let server = configuration.serverName
        let list = try session.drivePointer(until: deadline, doing: "asking for authentication methods") {
            libssh2_userauth_list(session.raw, user, UInt32(user.utf8.count))
        }
        if libssh2_userauth_authenticated(session.raw) != 0 { return }
        guard let list else {
            throw SSHError(.handshakeFailed, "SSH server \(server) broke off before authentication: \(session.lastErrorMessage)")
        }
        let methods = String(cString: list)
        guard methods.split(separator: ",").contains("publickey") else {
            throw SSHError(.authenticationFailed,
                           "SSH server \(server) does not accept public keys (it offers: \(methods)); Tether authenticates with keys or the agent only. Enable PubkeyAuthentication on the server")
        }

        var attempts: [Attempt] = []
        if configuration.useAgent, try authenticateWithAgent(session, deadline: deadline, attempts: &attempts) {
            return
        }
        if let path = configuration.identityPath, try authenticateWithFile(path, session, deadline: deadline, attempts: &attempts) {
            return
        }

        var message = "SSH server \(server) refused authentication as `\(user)`"
        message += attempts.isEmpty ? "; no key could be offered" : "; tried: " + attempts.map(\.description).joined(separator: ", ")
        message += ". Check that the public key is in ~\(user)/.ssh/authorized_keys on the server"
        if attempts.contains(where: \.isRSA) { message += ". " + Self.rsaExplanation }
        throw SSHError(.authenticationFailed, message)
    }

    /// True when one of the agent's keys was accepted.
    private func authenticateWithAgent(_ session: SSHSession, deadline: ContinuousClock.Instant,
                                       attempts: inout [Attempt]) throws(SSHError) -> Bool {
        let socketPath = configuration.agentSocketPath ?? ProcessInfo.processInfo.environment["SSH_AUTH_SOCK"]
        guard let socketPath, !socketPath.isEmpty else {
            logger.warning("agent = true but SSH_AUTH_SOCK is not set; is ssh-agent running?")
            attempts.append(Attempt(description: "no SSH agent (SSH_AUTH_SOCK is not set)", isRSA: false))
            return false
        }
        guard let agent = libssh2_agent_init(session.raw) else {
            throw SSHError(.handshakeFailed, "libssh2 could not set up SSH agent support")
        }
        defer {
            libssh2_agent_disconnect(agent)
            libssh2_agent_free(agent)
        }
        libssh2_agent_set_identity_path(agent, socketPath)
        guard libssh2_agent_connect(agent) == 0 else {
            attempts.append(Attempt(description: "SSH agent at \(socketPath) (could not connect: is ssh-agent running?)", isRSA: false))
            return false
        }
        guard libssh2_agent_list_identities(agent) == 0 else {
            attempts.append(Attempt(description: "SSH agent at \(socketPath) (could not list its keys)", isRSA: false))
            return false
        }
        var previous: UnsafeMutablePointer<libssh2_agent_publickey>?
        var offered = 0
        while true {
            var identity: UnsafeMutablePointer<libssh2_agent_publickey>?
            guard libssh2_agent_get_identity(agent, &identity, previous) == 0, let identity else { break }
            previous = identity
            offered += 1
            let blob = Array(UnsafeBufferPointer(start: identity.pointee.blob, count: identity.pointee.blob_len))
            let algorithm = HostKey.algorithm(ofBlob: blob) ?? "unknown"
            let comment = identity.pointee.comment.map { String(cString: $0) } ?? ""
            let rc = try session.drive(until: deadline, doing: "authenticating with the SSH agent") {
                libssh2_agent_userauth(agent, configuration.user, identity)
            }
            if rc == 0 {
                logger.debug("authenticated with an agent key", metadata: ["key": "\(algorithm) \(comment)"])
                return true
            }
            try rethrowIfSessionBroke(rc, session)
            attempts.append(Attempt(description: "agent key \(algorithm) \(comment)".trimmingCharacters(in: .whitespaces),
                                    isRSA: algorithm == "ssh-rsa"))
        }
        if offered == 0 {
            attempts.append(Attempt(description: "SSH agent at \(socketPath) (it holds no keys: run ssh-add)", isRSA: false))
        }
        return false
    }

    /// True when the identity file's key was accepted.
    private func authenticateWithFile(_ path: String, _ session: SSHSession, deadline: ContinuousClock.Instant,
                                      attempts: inout [Attempt]) throws(SSHError) -> Bool {
        let key: PrivateKeyFile
        do {
            key = try PrivateKeyFile(path: path)
        } catch .missing {
            throw SSHError(.invalidConfiguration, "the identity file \(path) does not exist; check `identity` in the tunnel")
        } catch {
            throw SSHError(.invalidConfiguration, "cannot read the identity file \(path); check its permissions")
        }
        if key.isEncrypted && configuration.passphrase == nil {
            throw SSHError(.invalidConfiguration,
                           "the identity file \(path) is encrypted; set the tunnel's `passphrase` (a secret reference) or load the key into ssh-agent and set `agent = true`")
        }
        let user = configuration.user
        let passphrase = configuration.passphrase
        let rc = try session.drive(until: deadline, doing: "authenticating with \(path)") {
            passphrase.withOptionalCString { secret in
                tether_ssh2_userauth_publickey_fromfile(session.raw, user, nil, path, secret)
            }
        }
        if rc == 0 {
            logger.debug("authenticated with the identity file", metadata: ["identity": "\(path)"])
            return true
        }
        let algorithm = key.algorithm ?? "unknown type"
        switch rc {
        case LIBSSH2_ERROR_FILE, LIBSSH2_ERROR_KEYFILE_AUTH_FAILED:
            let cause = key.isEncrypted ? "the passphrase is wrong, or " : ""
            throw SSHError(.authenticationFailed,
                           "libssh2 could not load the private key \(path) (\(algorithm)): \(cause)its format is one libssh2 1.10 cannot read (\(session.lastErrorMessage)). Use an OpenSSH ed25519 or ecdsa key (`ssh-keygen -t ed25519`)"
                           + (key.isRSA ? ". " + Self.rsaExplanation : ""))
        default:
            try rethrowIfSessionBroke(rc, session)
            attempts.append(Attempt(description: "identity \(path) (\(algorithm))", isRSA: key.isRSA))
            return false
        }
    }

    /// A refused key is one attempt; anything else means the session itself failed (retryable).
    private func rethrowIfSessionBroke(_ rc: Int32, _ session: SSHSession) throws(SSHError) {
        switch rc {
        case LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED, LIBSSH2_ERROR_AUTHENTICATION_FAILED, LIBSSH2_ERROR_METHOD_NOT_SUPPORTED,
             LIBSSH2_ERROR_AGENT_PROTOCOL, LIBSSH2_ERROR_FILE:
            return
        default:
            throw SSHError(.handshakeFailed,
                           "the SSH session to \(configuration.serverName) failed during authentication: \(session.lastErrorMessage)")
        }
    }
}

private extension Optional where Wrapped == String {
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let text): return text.withCString { body($0) }
        case .none: return body(nil)
        }
    }
}
