import Foundation
import Synchronization
import TetherCore
#if canImport(Glibc)
import Glibc
#endif

/// The real `tether` binary, run as a subprocess, as a user or a script would run it.
final class TetherProcess: Sendable {
    /// The binary SwiftPM built beside this test bundle.
    static let binary: URL = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("tether")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("tether")
    }()

    struct Result: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        func events() throws -> [Event] { try lines.map { try EventCodec.decode($0) } }
    }

    private let child: ChildProcess
    var pid: pid_t { child.pid }
    private let state = Output()
    private struct State {
        var stdout = Data()
        var stderr = Data()
        var openPipes = 2
        var peakRSSKilobytes = 0
    }
    private final class Output: Sendable {
        let mutex = Mutex(State())
        func withLock<T>(_ body: (inout State) -> T) -> T { mutex.withLock { body(&$0) } }
    }

    /// Starts `tether ARGS` with a clean environment plus `environment`. Spawned with
    /// posix_spawn and read by plain threads: Foundation's Process and FileHandle's readability
    /// handlers have crashed and hung test runs on Linux.
    /// `shell`: commands a shell runs first, in the process that then becomes tether (`ulimit -n
    /// 200`, `umask 022`): the limits and modes a user's shell would hand it. `executable`: another
    /// program than tether (a shell running a printed command line, the pty driver).
    init(_ arguments: [String], environment: [String: String] = [:], shell: String? = nil,
         executable: String = TetherProcess.binary.path) throws {
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": NSTemporaryDirectory(),
                   "NO_COLOR": "1"]
        for (key, value) in environment { env[key] = value }
        var out: [Int32] = [-1, -1]
        var err: [Int32] = [-1, -1]
        guard pipe(&out) == 0, pipe(&err) == 0 else { throw FixtureError("pipe failed") }
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        do {
            if let shell {
                child = try ChildProcess("/bin/sh", ["-c", shell + "\nexec \"$0\" \"$@\"", executable] + arguments,
                                         environment: env, output: out[1], errorOutput: err[1])
            } else {
                child = try ChildProcess(executable, arguments, environment: env, output: out[1], errorOutput: err[1])
            }
        } catch {
            for fd in out + err { close(fd) }
            throw error
        }
        close(out[1])
        close(err[1])
        let state = self.state
        Self.drain(out[0], state: state) { data in state.withLock { $0.stdout.append(data) } }
        Self.drain(err[0], state: state) { data in state.withLock { $0.stderr.append(data) } }
        Self.sampleMemory(of: child, state: state)
    }

    /// The kernel's high-water mark of the child's resident memory (`VmHWM`), read every 50 ms
    /// while it runs: the last reading before it exits is its peak.
    private static func sampleMemory(of child: ChildProcess, state: Output) {
        let path = "/proc/\(child.pid)/status"
        let thread = Thread {
            while child.isRunning {
                if let status = try? String(contentsOfFile: path, encoding: .utf8),
                   let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                   let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") {
                    state.withLock { $0.peakRSSKilobytes = max($0.peakRSSKilobytes, kilobytes) }
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        thread.start()
    }

    /// The highest resident memory seen so far, in kilobytes.
    var peakRSSKilobytes: Int { state.withLock { $0.peakRSSKilobytes } }

    private static func drain(_ fd: Int32, state: Output, append: @escaping @Sendable (Data) -> Void) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                let data = Data(buffer[0..<count])
                append(data)
            }
            close(fd)
            state.withLock { $0.openPipes -= 1 }
        }
        thread.start()
    }

    var isRunning: Bool { child.isRunning }

    var stdoutLines: [String] {
        state.withLock { String(decoding: $0.stdout, as: UTF8.self) }.split(separator: "\n", omittingEmptySubsequences: true)
            .map(String.init)
    }

    var stderrText: String { state.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    /// Waits until a stdout line satisfies `predicate`; returns it.
    func waitForLine(timeout: Duration = .seconds(20), _ predicate: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = stdoutLines.first(where: predicate) { return line }
            if !isRunning, let line = stdoutLines.first(where: predicate) { return line }
            if !isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        if let line = stdoutLines.first(where: predicate) { return line }
        throw TimedOut(what: "a matching line", stdout: stdoutLines.joined(separator: "\n"), stderr: stderrText)
    }

    func waitForEvent(_ type: EventType, timeout: Duration = .seconds(20)) async throws -> Event {
        let line = try await waitForLine(timeout: timeout) { $0.contains("\"type\":\"\(type.rawValue)\"") }
        return try EventCodec.decode(line)
    }

    /// Waits for the process to exit (killing it after `timeout`).
    func finish(timeout: Duration = .seconds(30)) async throws -> Result {
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if isRunning {
            child.signal(SIGKILL)
            child.wait()
            throw TimedOut(what: "exit", stdout: stdoutLines.joined(separator: "\n"), stderr: stderrText)
        }
        let raw = child.wait()
        // Both pipes reach EOF once the child (their only writer) is gone.
        while state.withLock({ $0.openPipes > 0 }), ContinuousClock.now < deadline + .seconds(5) {
            try await Task.sleep(for: .milliseconds(5))
        }
        let status: Int32 = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        return state.withLock {
            Result(status: status, stdout: String(decoding: $0.stdout, as: UTF8.self),
                   stderr: String(decoding: $0.stderr, as: UTF8.self))
        }
    }

    func interrupt() { child.signal(SIGINT) }
    /// SIGKILL: no cleanup at all, as a crash or an OOM kill.
    func kill() { child.signal(SIGKILL) }
    func terminate() { child.signal(SIGTERM) }
    /// SIGTERM, then SIGKILL if it still runs after `grace`, and reaps it: for a `defer`, so that
    /// no child outlives its test, whatever the child does with SIGTERM.
    func stop(grace: Duration = .seconds(15)) {
        child.signal(SIGTERM)
        let deadline = ContinuousClock.now + grace
        while isRunning, ContinuousClock.now < deadline { usleep(20_000) }
        child.signal(SIGKILL)
        child.wait()
    }

    /// Runs to completion.
    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(30)) async throws -> Result {
        try await TetherProcess(arguments, environment: environment).finish(timeout: timeout)
    }

    /// Runs a command line the CLI printed for the user, as printed: through `sh -c`, with the
    /// built binary first on PATH (`tether …` is this build's).
    static func runPrinted(_ line: String, environment: [String: String] = [:], timeout: Duration = .seconds(30)) async throws -> Result {
        let path = binary.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        var env = environment
        env["PATH"] = path
        return try await TetherProcess(["-c", line], environment: env, executable: "/bin/sh").finish(timeout: timeout)
    }

    struct TimedOut: Error, CustomStringConvertible {
        let what: String
        let stdout: String
        let stderr: String
        var description: String { "timed out waiting for \(what)\n--- stdout\n\(stdout)\n--- stderr\n\(stderr)" }
    }
}

/// A config file in a temporary directory, chmod 600.
struct TemporaryConfig {
    let path: String

    init(_ text: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("config.toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }
}

extension TetherProcess {
    struct CommandFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// `tether sessions create` with `global` (and `--title`): the new session's id.
    static func createSession(_ global: [String], environment: [String: String] = [:], title: String? = nil) async throws -> String {
        let created = try await run(["sessions", "create"] + (title.map { ["--title", $0] } ?? []) + global, environment: environment)
        guard created.status == 0, let session = try created.events().first?.session else {
            throw CommandFailed(description: "sessions create exited \(created.status): \(created.stderr)")
        }
        return session
    }
}

extension TetherProcess {
    /// The events a running process has printed so far, once `done` holds for them.
    func waitForEvents(timeout: Duration = .seconds(30), until done: ([Event]) -> Bool) async throws -> [Event] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let events = stdoutLines.compactMap { try? EventCodec.decode($0) }
            if done(events) { return events }
            guard ContinuousClock.now < deadline, isRunning else {
                throw TimedOut(what: "the expected events", stdout: stdoutLines.joined(separator: "\n"), stderr: stderrText)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
