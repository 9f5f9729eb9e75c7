import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private OpenSSH sshd for one test: its own directory, host key, authorized_keys and config,
/// listening on a free loopback port. It never touches the system's sshd configuration.
final class SSHServerFixture: @unchecked Sendable {
    static let sshd = "/usr/sbin/sshd"

    let directory: String
    let port: Int
    private let lock = NSLock()
    private var process: ChildProcess?

    var hostKeyPath: String { directory + "/ssh_host_ed25519_key" }
    var authorizedKeysPath: String { directory + "/authorized_keys" }
    var configPath: String { directory + "/sshd_config" }
    var logPath: String { directory + "/sshd.log" }

    /// `extraHostKeyTypes` adds host keys (e.g. "ecdsa") beside the ed25519 one.
    init(allowTcpForwarding: Bool = true, extraHostKeyTypes: [String] = [], extraConfig: [String] = []) throws {
        directory = try TestFiles.makeTemporaryDirectory("sshd")
        port = try TestSockets.freePort()
        try Tools.generateKey(type: "ed25519", at: hostKeyPath)
        var extraHostKeys: [String] = []
        for type in extraHostKeyTypes {
            let path = directory + "/ssh_host_\(type)_key"
            try Tools.generateKey(type: type, at: path)
            extraHostKeys.append("HostKey \(path)")
        }
        _ = FileManager.default.createFile(atPath: authorizedKeysPath, contents: Data())
        let config = [
            "ListenAddress 127.0.0.1",
            "HostKey \(hostKeyPath)",
            "PidFile none",
            "AuthorizedKeysFile \(authorizedKeysPath)",
            "StrictModes no",
            "UsePAM no",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "AllowTcpForwarding \(allowTcpForwarding ? "yes" : "no")",
            "AllowAgentForwarding no",
            "X11Forwarding no",
            "LogLevel VERBOSE",
        ] + extraHostKeys + extraConfig
        try (config.joined(separator: "\n") + "\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        // sshd's privilege-separation directory; absent on machines that never ran the service.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o755])
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func authorize(publicKeyOf privateKeyPath: String) throws {
        let key = try String(contentsOfFile: privateKeyPath + ".pub", encoding: .utf8)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: authorizedKeysPath))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(key.utf8))
    }

    /// Starts sshd and waits until it answers with an SSH banner.
    func start() throws {
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else { throw FixtureError("cannot open \(logPath)") }
        defer { close(log) }
        let process = try ChildProcess(Self.sshd, ["-D", "-e", "-f", configPath, "-p", String(port)], output: log)
        lock.withLock { self.process = process }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let status = process.status {
                throw FixtureError("sshd exited at once (status \(status)); log:\n\(self.log)")
            }
            if TestSockets.answersSSH(port: port) { return }
            usleep(50_000)
        }
        throw FixtureError("sshd did not answer on port \(port); log:\n\(self.log)")
    }

    /// Kills sshd and every process it forked (the per-connection children hold the sessions),
    /// as a crash or a reboot of the server would.
    func kill() {
        guard let process = lock.withLock({ () -> ChildProcess? in
            defer { self.process = nil }
            return self.process
        }) else { return }
        for child in Processes.descendants(of: process.pid) { Glibc.kill(child, SIGKILL) }
        process.signal(SIGKILL)
        process.wait()
    }

    func stop() { kill() }

    /// Replaces the host key, as a reinstalled (or impersonated) server would present.
    func regenerateHostKey() throws {
        try? FileManager.default.removeItem(atPath: hostKeyPath)
        try? FileManager.default.removeItem(atPath: hostKeyPath + ".pub")
        try Tools.generateKey(type: "ed25519", at: hostKeyPath)
    }

    /// `[127.0.0.1]:PORT ssh-ed25519 AAAA…`, as `ssh` would record it (`type` picks another host key).
    func knownHostsLine(name: String? = nil, type: String = "ed25519") throws -> String {
        let fields = try String(contentsOfFile: directory + "/ssh_host_\(type)_key.pub", encoding: .utf8).split(separator: " ")
        return "\(name ?? "[127.0.0.1]:\(port)") \(fields[0]) \(fields[1])"
    }

    /// The host key's fingerprint according to ssh-keygen, e.g. `SHA256:…`.
    func hostKeyFingerprint() throws -> String {
        try Tools.fingerprint(ofPublicKey: hostKeyPath + ".pub")
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum TestFiles {
    static func makeTemporaryDirectory(_ label: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("tether-ssh-\(label)-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        return path
    }
}

/// The OpenSSH command-line tools the tests use to make keys and compute fingerprints, so the
/// expectations come from OpenSSH itself rather than from the code under test.
enum Tools {
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String {
        try ChildProcess.run(executable, arguments, environment: environment)
    }

    static func generateKey(type: String, at path: String, passphrase: String = "", bits: Int? = nil) throws {
        var arguments = ["-q", "-t", type, "-N", passphrase, "-C", "tether-test-\(type)", "-f", path]
        if let bits { arguments += ["-b", String(bits)] }
        try run("/usr/bin/ssh-keygen", arguments)
    }

    static func fingerprint(ofPublicKey path: String) throws -> String {
        let output = try run("/usr/bin/ssh-keygen", ["-l", "-E", "sha256", "-f", path])
        return String(output.split(separator: " ")[1])
    }
}

enum Processes {
    /// Every live process below `pid`, read from /proc (children first found, then theirs).
    static func descendants(of pid: Int32) -> [Int32] {
        var parents: [Int32: [Int32]] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let child = Int32(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 2, let parent = Int32(fields[1]) { parents[parent, default: []].append(child) }
        }
        var result: [Int32] = []
        var queue = [pid]
        while let next = queue.popLast() {
            let children = parents[next] ?? []
            result += children
            queue += children
        }
        return result
    }
}

/// An `ssh-agent` of our own on a private socket, stopped with the test.
final class SSHAgentFixture: @unchecked Sendable {
    let socketPath: String
    private let process: ChildProcess
    private let directory: String

    init() throws {
        directory = try TestFiles.makeTemporaryDirectory("agent")
        socketPath = directory + "/agent.sock"
        process = try ChildProcess("/usr/bin/ssh-agent", ["-D", "-a", socketPath])
        let deadline = Date().addingTimeInterval(5)
        while !FileManager.default.fileExists(atPath: socketPath) {
            guard Date() < deadline, process.isRunning else { throw FixtureError("ssh-agent did not create \(socketPath)") }
            usleep(20_000)
        }
    }

    func add(_ privateKeyPath: String) throws {
        try Tools.run("/usr/bin/ssh-add", ["-q", privateKeyPath], environment: ["SSH_AUTH_SOCK": socketPath])
    }

    deinit {
        process.signal(SIGTERM)
        process.wait()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
