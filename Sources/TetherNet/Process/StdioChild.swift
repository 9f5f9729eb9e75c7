import Foundation
import Logging
import Synchronization

/// A child process spoken to over its stdin and stdout, one message per line (`codex app-server`
/// without `--listen`).
///
/// The child's stdin and stdout are one end of a `socketpair`; this side adopts the other as a
/// ``TCPLineConnection``, so reading, writing and their bounds are the same as for a TCP peer.
/// Its stderr is logged line by line (at debug level: the child's own diagnostics). Closing the
/// connection gives the child EOF on stdin; `stop()` also sends SIGTERM after `grace`.
public final class StdioChild: Sendable {
    public let connection: TCPLineConnection
    /// `program arg…`, for messages.
    public let commandLine: String
    private let process: Mutex<Process>
    private let logger: Logger

    /// Starts `arguments[0]` (looked up in `PATH` when it has no slash) with the rest as its
    /// arguments. Throws `NetError(.connect)` when the program cannot be found or started.
    public static func spawn(_ arguments: [String], environment: [String: String]? = nil, maxLineLength: Int = 64 << 20,
                             logger: Logger) throws(NetError) -> StdioChild {
        let commandLine = arguments.joined(separator: " ")
        guard let program = arguments.first, let executable = locate(program, environment: environment ?? ProcessInfo.processInfo.environment) else {
            throw NetError(.connect, url: "stdio:" + commandLine,
                           detail: "\(arguments.first ?? "(nothing)") is not an executable program here (looked in PATH)")
        }
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw NetError(.connect, url: "stdio:" + commandLine, detail: "cannot create a socket pair: \(TCPSocket.errorText())")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(arguments.dropFirst())
        if let environment { process.environment = environment }
        let childEnd = FileHandle(fileDescriptor: fds[1], closeOnDealloc: false)
        process.standardInput = childEnd
        process.standardOutput = childEnd
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
        } catch {
            _ = TCPSocket.systemClose(fds[0])
            _ = TCPSocket.systemClose(fds[1])
            throw NetError(.connect, url: "stdio:" + commandLine, detail: "cannot start \(executable): \(error)")
        }
        _ = TCPSocket.systemClose(fds[1])
        let connection = try TCPLineConnection.adopt(socket: fds[0], endpoint: "stdio:" + commandLine, maxLineLength: maxLineLength,
                                                     bufferedBytes: 4 << 20, logger: logger)
        let child = StdioChild(connection: connection, commandLine: commandLine, process: process, logger: logger)
        child.logStandardError(errors.fileHandleForReading)
        logger.debug("started a stdio child", metadata: ["command": "\(commandLine)", "pid": "\(process.processIdentifier)"])
        return child
    }

    private init(connection: TCPLineConnection, commandLine: String, process: Process, logger: Logger) {
        self.connection = connection
        self.commandLine = commandLine
        self.process = Mutex(process)
        self.logger = logger
    }

    public var processIdentifier: Int32 { process.withLock { $0.processIdentifier } }
    public var isRunning: Bool { process.withLock { $0.isRunning } }

    /// Closes stdin and stdout (the child sees EOF), then sends SIGTERM if it is still running after `grace`.
    public func stop(grace: Duration = .seconds(2)) async {
        connection.close()
        let deadline = ContinuousClock.now + grace
        while isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        process.withLock { if $0.isRunning { $0.terminate() } }
    }

    private func logStandardError(_ handle: FileHandle) {
        let logger = logger
        let command = commandLine
        let thread = Thread {
            // Lines of the child's stderr, each cut at 4 KiB: diagnostics, never data.
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline].prefix(4096), as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    if !line.isEmpty { logger.debug("child stderr: \(line)", metadata: ["command": "\(command)"]) }
                }
                if pending.count > 4096 { pending.removeAll() }
            }
            try? handle.close()
        }
        thread.name = "tether.child.stderr"
        thread.start()
    }

    /// `program`'s path: as given when it has a slash, else the first executable in `PATH`.
    static func locate(_ program: String, environment: [String: String]) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
