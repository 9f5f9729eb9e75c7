import Foundation

/// The only state shared between callers of `SSHTunnel` and its event-loop thread: a stop flag,
/// the self-pipe that wakes the loop's poll(2), the endpoint, and the outcome. Everything else
/// belongs to the loop thread alone.
final class TunnelControl: @unchecked Sendable {
    enum Phase { case idle, starting, running, finished }

    private let condition = NSCondition()
    private var phase = Phase.idle
    private var stopRequested = false
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1
    private var endpointPort: Int?
    private var outcome: Result<Void, SSHError>?
    private var waiters: [CheckedContinuation<Void, any Error>] = []

    /// Moves from idle to starting and opens the wake pipe; a tunnel starts once.
    func beginStart() throws(SSHError) {
        condition.lock()
        defer { condition.unlock() }
        guard phase == .idle else {
            throw SSHError(.invalidConfiguration, "this SSH tunnel was already started; create a new SSHTunnel to start again")
        }
        if stopRequested {
            throw SSHError(.stopped, "the SSH tunnel was stopped before it started")
        }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw SSHError(.listenFailed, "could not create the tunnel's wake-up pipe: \(SocketIO.errnoText())")
        }
        for fd in fds {
            SocketIO.setNonBlocking(fd)
            SocketIO.setCloseOnExec(fd)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        phase = .starting
    }

    /// The read end of the wake pipe, polled by the loop. Valid from `beginStart` to `finish`.
    var wakeFD: Int32 {
        condition.lock()
        defer { condition.unlock() }
        return wakeRead
    }

    var isStopRequested: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopRequested
    }

    func requestStop() {
        condition.lock()
        defer { condition.unlock() }
        stopRequested = true
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    /// Empties the wake pipe (the loop only needs to know it was poked).
    func drainWake() {
        let fd = wakeFD
        guard fd >= 0 else { return }
        var scratch = [UInt8](repeating: 0, count: 64)
        while read(fd, &scratch, scratch.count) > 0 {}
    }

    func setRunning(port: Int) {
        condition.lock()
        defer { condition.unlock() }
        endpointPort = port
        phase = .running
    }

    var localPort: Int? {
        condition.lock()
        defer { condition.unlock() }
        return phase == .running ? endpointPort : nil
    }

    /// Called once by the loop thread after it closed the listener and every socket.
    func finish(_ result: Result<Void, SSHError>) {
        condition.lock()
        outcome = result
        phase = .finished
        endpointPort = nil
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
        wakeRead = -1
        wakeWrite = -1
        let resumed = waiters
        waiters = []
        condition.broadcast()
        condition.unlock()
        for waiter in resumed { waiter.resume(with: result.mapError { $0 as any Error }) }
    }

    /// Blocks until the loop thread has finished (or `seconds` pass); nothing to wait for when
    /// the tunnel never started.
    func waitUntilFinished(seconds: Double) {
        let limit = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while phase == .starting || phase == .running {
            if !condition.wait(until: limit) { return }
        }
    }

    func waitForOutcome() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            condition.lock()
            if let outcome {
                condition.unlock()
                continuation.resume(with: outcome.mapError { $0 as any Error })
            } else if phase == .idle {
                condition.unlock()
                continuation.resume(throwing: SSHError(.stopped, "the SSH tunnel was never started; call start() first"))
            } else {
                waiters.append(continuation)
                condition.unlock()
            }
        }
    }
}
