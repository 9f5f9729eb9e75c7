import Foundation

/// The real binary on a pseudo-terminal (Tests/Terminal/pty-drive.py, Debian's python3), driven
/// by steps a person would take: wait for text, type keys (Ctrl-C from the terminal driver).
struct PseudoTerminal {
    struct Session {
        /// Everything the terminal showed (stdout and stderr together, as a person sees them).
        let shown: String
        /// The command's exit status.
        let status: Int32
        /// Whether every step ran (false: an `expect` timed out; `shown` says where).
        let completed: Bool
    }

    static let driver = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Terminal/pty-drive.py").path

    private let process: TetherProcess
    private let timeout: Duration

    /// Starts `COMMAND…` (default: this build's `tether`) with `arguments` on a `rows`×`cols`
    /// terminal, going through `steps` (`expect:TEXT`, `send:TEXT`, `sleep:S`).
    init(_ arguments: [String], steps: [String], environment: [String: String] = [:], command: [String]? = nil,
         rows: Int = 24, cols: Int = 80, timeout: Duration = .seconds(40)) throws {
        var env = ["TERM": "xterm-256color"]
        for (key, value) in environment { env[key] = value }
        self.timeout = timeout
        process = try TetherProcess(
            [Self.driver, "--timeout", String(Double(timeout.components.seconds)), "--rows", String(rows), "--cols", String(cols)]
                + steps + ["--"] + (command ?? [TetherProcess.binary.path]) + arguments,
            environment: env, executable: "/usr/bin/python3")
    }

    /// What the terminal has shown so far.
    var shown: String { process.stdoutLines.joined(separator: "\n").replacingOccurrences(of: "\r", with: "") }

    /// Waits until the terminal has shown `text`.
    func waitFor(_ text: String, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !shown.contains(text) {
            guard ContinuousClock.now < deadline, process.isRunning else {
                throw FixtureError("the terminal never showed \(text.debugDescription):\n\(shown)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits for the command to end.
    func finish() async throws -> Session {
        let result = try await process.finish(timeout: timeout + .seconds(10))
        var shown = result.stdout.replacingOccurrences(of: "\r", with: "")
        var status: Int32 = -1
        if let marker = shown.range(of: "\n[exit ", options: .backwards) {
            status = Int32(shown[marker.upperBound...].prefix { $0.isNumber }) ?? -1
            shown = String(shown[..<marker.lowerBound])
        }
        return Session(shown: shown, status: status, completed: result.status == 0)
    }

    /// Runs to the end.
    static func run(_ arguments: [String], steps: [String], environment: [String: String] = [:], command: [String]? = nil,
                    timeout: Duration = .seconds(40)) async throws -> Session {
        try await PseudoTerminal(arguments, steps: steps, environment: environment, command: command, timeout: timeout).finish()
    }
}
