import Foundation
import Synchronization
import Testing
import TetherCore

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

    private let process: Process
    private let state = Output()
    private struct State {
        var stdout = Data()
        var stderr = Data()
    }
    private final class Output: Sendable {
        let mutex = Mutex(State())
        func withLock<T>(_ body: (inout State) -> T) -> T { mutex.withLock { body(&$0) } }
    }

    /// Starts `tether ARGS` with a clean environment plus `environment`.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": NSTemporaryDirectory(),
                   "NO_COLOR": "1"]
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        out.fileHandleForReading.readabilityHandler = { [state] handle in
            let data = handle.availableData
            state.withLock { $0.stdout.append(data) }
        }
        err.fileHandleForReading.readabilityHandler = { [state] handle in
            let data = handle.availableData
            state.withLock { $0.stderr.append(data) }
        }
        try process.run()
    }

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
            if !process.isRunning, let line = stdoutLines.first(where: predicate) { return line }
            if !process.isRunning { break }
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
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning {
            process.terminate()
            throw TimedOut(what: "exit", stdout: stdoutLines.joined(separator: "\n"), stderr: stderrText)
        }
        process.waitUntilExit()
        try await Task.sleep(for: .milliseconds(50))  // let the pipes drain
        return state.withLock {
            Result(status: process.terminationStatus, stdout: String(decoding: $0.stdout, as: UTF8.self),
                   stderr: String(decoding: $0.stderr, as: UTF8.self))
        }
    }

    func interrupt() { process.interrupt() }
    func terminate() { if process.isRunning { process.terminate() } }

    /// Runs to completion.
    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(30)) async throws -> Result {
        try await TetherProcess(arguments, environment: environment).finish(timeout: timeout)
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
