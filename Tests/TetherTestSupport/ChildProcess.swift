import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn and reaped with waitpid on its own pid.
///
/// Not Foundation's `Process`: on Linux its child monitor can block in waitpid on another running
/// child (a background sshd) and then never notices a short-lived ssh-keygen exit. Children also
/// get a clean signal mask and default dispositions (the spawning thread may block signals).
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// `output` receives stdout and stderr (nil: /dev/null).
    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, output: Int32? = nil,
         errorOutput: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output, let errorOutput {
            posix_spawn_file_actions_adddup2(&actions, output, 1)
            posix_spawn_file_actions_adddup2(&actions, errorOutput, 2)
        } else if let output {
            posix_spawn_file_actions_adddup2(&actions, output, 1)
            posix_spawn_file_actions_adddup2(&actions, output, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var environment = environment ?? ProcessInfo.processInfo.environment
        if environment["PATH"] == nil { environment["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw FixtureError("cannot start \(executable): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// Nil while it runs.
    var status: Int32? {
        lock.withLock {
            if exitStatus == nil {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status }
            }
            return exitStatus
        }
    }

    var isRunning: Bool { status == nil }

    @discardableResult
    func wait() -> Int32 {
        lock.withLock {
            if let exitStatus { return exitStatus }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            exitStatus = status
            return status
        }
    }

    func signal(_ signal: Int32) {
        if isRunning { _ = kill(pid, signal) }
    }

    /// Runs to completion and returns what it printed; throws when it exits non-zero.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw FixtureError("pipe failed") }
        // Close-on-exec, so children spawned meanwhile by other threads cannot hold it open.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let child: ChildProcess
        do {
            child = try ChildProcess(executable, arguments, environment: environment, output: fds[1])
        } catch {
            close(fds[0])
            close(fds[1])
            throw error
        }
        close(fds[1])
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n > 0 { output += buffer[0..<n]; continue }
            if n < 0 && errno == EINTR { continue }
            break
        }
        close(fds[0])
        let status = child.wait()
        let text = String(decoding: output, as: UTF8.self)
        guard status == 0 else {
            throw FixtureError("\(executable) \(arguments.joined(separator: " ")) failed (\(status)): \(text)")
        }
        return text
    }
}
