@testable import TetherTestSupport
import Foundation
import Logging
import TetherSSH

/// Collects a tunnel's log lines so tests can assert what it reported.
final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    var logger: Logger {
        var logger = Logger(label: "tether.ssh.test") { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    var text: String { lock.withLock { lines.joined(separator: "\n") } }

    func contains(_ fragment: String) -> Bool { lock.withLock { lines.contains { $0.contains(fragment) } } }

    fileprivate func append(_ line: String) {
        lock.withLock { lines.append(line) }
        if ProcessInfo.processInfo.environment["TETHER_SSH_TEST_LOG"] != nil {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let rendered = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            capture.append("\(event.level) \(event.message) \(rendered)")
        }
    }
}

/// An sshd, a client key it accepts, a known_hosts file that knows it, a target echo server and a
/// log capture: everything one tunnel test needs, torn down with it.
final class TunnelFixture: @unchecked Sendable {
    let server: SSHServerFixture
    let echo: EchoServer
    let directory: String
    let keyPath: String
    let knownHostsPath: String
    let pinStorePath: String
    let logs = LogCapture()

    init(allowTcpForwarding: Bool = true, echoMode: EchoServer.Mode = .streaming, keyType: String = "ed25519",
         passphrase: String = "", trustServer: Bool = true, serverConfig: [String] = [],
         extraHostKeyTypes: [String] = []) throws {
        server = try SSHServerFixture(allowTcpForwarding: allowTcpForwarding, extraHostKeyTypes: extraHostKeyTypes,
                                      extraConfig: serverConfig)
        echo = try EchoServer(mode: echoMode)
        directory = try TestFiles.makeTemporaryDirectory("client")
        keyPath = directory + "/id_\(keyType)"
        knownHostsPath = directory + "/known_hosts"
        pinStorePath = directory + "/state/pins"
        try Tools.generateKey(type: keyType, at: keyPath, passphrase: passphrase, bits: keyType == "rsa" ? 2048 : nil)
        try server.authorize(publicKeyOf: keyPath)
        if trustServer { try writeKnownHosts([server.knownHostsLine()]) }
        try server.start()
    }

    deinit {
        server.stop()
        echo.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func writeKnownHosts(_ lines: [String]) throws {
        try (lines.joined(separator: "\n") + "\n").write(toFile: knownHostsPath, atomically: true, encoding: .utf8)
    }

    func configuration(
        identity: String? = nil, passphrase: String? = nil, useAgent: Bool = false, agentSocket: String? = nil,
        trustOnFirstUse: Bool = false, keepalive: Int = 30, targetPort: Int? = nil, localPort: Int? = nil
    ) -> SSHTunnel.Configuration {
        SSHTunnel.Configuration(
            host: "127.0.0.1", port: server.port, user: NSUserName(),
            identityPath: useAgent ? identity : (identity ?? keyPath), passphrase: passphrase,
            useAgent: useAgent, agentSocketPath: agentSocket,
            knownHostsPath: knownHostsPath, trustOnFirstUse: trustOnFirstUse, pinStorePath: pinStorePath,
            localPort: localPort, keepalive: keepalive,
            targetHost: "127.0.0.1", targetPort: targetPort ?? echo.port,
            connectTimeout: 15
        )
    }

    func tunnel(_ configuration: SSHTunnel.Configuration? = nil) -> SSHTunnel {
        SSHTunnel(configuration: configuration ?? self.configuration(), logger: logs.logger)
    }

    /// Starts the tunnel and expects it to fail; returns the error.
    func startFailure(_ configuration: SSHTunnel.Configuration) async -> SSHError? {
        let tunnel = tunnel(configuration)
        defer { tunnel.stop() }
        do {
            _ = try await tunnel.start()
            return nil
        } catch let error as SSHError {
            return error
        } catch {
            return SSHError(.handshakeFailed, "unexpected error type: \(error)")
        }
    }
}

/// Deterministic pseudo-random bytes (xorshift), so a corrupted byte anywhere shows.
func patternBytes(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
    var state = seed
    var result = [UInt8](repeating: 0, count: count)
    var index = 0
    while index < count {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        var word = state
        for _ in 0..<8 where index < count {
            result[index] = UInt8(truncatingIfNeeded: word)
            word >>= 8
            index += 1
        }
    }
    return result
}
