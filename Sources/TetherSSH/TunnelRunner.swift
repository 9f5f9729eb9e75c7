import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tunnel thread's whole life: establish the session (connect, handshake, host key,
/// authentication), forward until the session dies, re-establish with backoff while the listener
/// keeps its port, and give up only on a stop request or an error retrying cannot fix.
final class TunnelRunner {
    private let configuration: SSHTunnel.Configuration
    private let logger: Logger
    private let control: TunnelControl
    private let listener: LoopbackListener
    private let counter = ConnectionCounter()
    /// A session that failed this soon after it was established does not reset the backoff.
    private static let stableAfter: Duration = .seconds(10)

    init(configuration: SSHTunnel.Configuration, logger: Logger, control: TunnelControl, listener: LoopbackListener) {
        self.configuration = configuration
        self.logger = logger
        self.control = control
        self.listener = listener
    }

    func run(started: CheckedContinuation<Void, any Error>) {
        // Named for ps/top/gdb (at most 15 characters on Linux; set from the thread itself).
        Thread.current.name = "tether-ssh"
        var pendingStart: CheckedContinuation<Void, any Error>? = started
        let result = runSessions(&pendingStart)
        listener.close()
        control.finish(result)
        if let pendingStart {
            pendingStart.resume(throwing: result.failure ?? SSHError(.stopped, "the SSH tunnel was stopped before it was established"))
        }
    }

    private func runSessions(_ pendingStart: inout CheckedContinuation<Void, any Error>?) -> Result<Void, SSHError> {
        var backoff = ReconnectBackoff()
        while true {
            if control.isStopRequested {
                return pendingStart == nil ? .success(()) : .failure(SSHError(.stopped, "the SSH tunnel was stopped before it was established"))
            }
            let session: SSHSession
            do {
                session = try establish()
            } catch {
                if error.kind == .stopped { return pendingStart == nil ? .success(()) : .failure(error) }
                if pendingStart != nil { return .failure(error) }
                if error.isFatal {
                    logger.critical("giving up on the SSH tunnel: \(error.message)")
                    return .failure(error)
                }
                let delay = backoff.next()
                logger.warning("could not re-establish the SSH session; retrying in \(delay) s", metadata: ["error": "\(error.message)"])
                if !pause(seconds: delay) { return .success(()) }
                continue
            }

            if let start = pendingStart {
                control.setRunning(port: listener.port)
                pendingStart = nil
                start.resume()
                logger.info("SSH tunnel established", metadata: [
                    "listen": "\(LoopbackListener.host):\(listener.port)",
                    "target": "\(SSHTunnel.Configuration.format(configuration.targetHost, configuration.targetPort))",
                ])
            } else {
                logger.info("SSH tunnel re-established", metadata: ["listen": "\(LoopbackListener.host):\(listener.port)"])
            }

            let began = ContinuousClock.now
            let ending = LocalForwarder(session: session, listener: listener, control: control,
                                        configuration: configuration, logger: logger, counter: counter).run()
            session.close(graceful: ending == .stopped)
            guard case .sessionLost(let reason) = ending else { return .success(()) }

            if began.duration(to: .now) >= Self.stableAfter { backoff.reset() }
            let delay = backoff.next()
            logger.warning("SSH session lost; re-establishing in \(delay) s", metadata: ["reason": "\(reason)"])
            if !pause(seconds: delay) { return .success(()) }
        }
    }

    private func establish() throws(SSHError) -> SSHSession {
        let deadline = ContinuousClock.now + .seconds(configuration.connectTimeout)
        let session = try SSHSession(control: control, serverName: configuration.serverName)
        do {
            let verifier = try HostKeyVerifier(session: session, configuration: configuration, logger: logger)
            session.preferHostKeyAlgorithms(verifier.preferredAlgorithms())
            try session.connect(host: configuration.host, port: configuration.port, deadline: deadline)
            try session.handshake(deadline: deadline)
            try verifier.verify(session)
            try SSHAuthenticator(configuration: configuration, logger: logger).authenticate(session, deadline: deadline)
        } catch {
            session.close(graceful: false)
            throw error
        }
        if configuration.keepalive > 0 {
            session.configureKeepalive(seconds: configuration.keepalive)
            session.setDeadLinkTimeout(seconds: max(10, 3 * configuration.keepalive))
        }
        return session
    }

    /// Waits between attempts. Connections arriving meanwhile are reset at once, so clients fail
    /// fast and retry on their own schedule. False when a stop was requested.
    private func pause(seconds: Int) -> Bool {
        let until = ContinuousClock.now + .seconds(seconds)
        while !control.isStopRequested {
            let remaining = ContinuousClock.now.duration(to: until)
            if remaining <= .zero { return true }
            var fds = [
                pollfd(fd: control.wakeFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&fds, nfds_t(fds.count), Int32(clamping: remaining.milliseconds + 1))
            if fds[0].revents != 0 { control.drainWake() }
            if fds[1].revents != 0 {
                var exhausted = false
                while !exhausted {
                    switch listener.accept() {
                    case .connection(let fd):
                        logger.debug("refused a local connection while the SSH session is down")
                        SocketIO.abort(fd)
                    case .none:
                        exhausted = true
                    case .exhausted:
                        // Out of descriptors: let the backlog wait rather than spin.
                        return !control.isStopRequested && pauseQuietly(until: until)
                    }
                }
            }
        }
        return false
    }

    private func pauseQuietly(until: ContinuousClock.Instant) -> Bool {
        while !control.isStopRequested {
            let remaining = ContinuousClock.now.duration(to: until)
            if remaining <= .zero { return true }
            var fds = [pollfd(fd: control.wakeFD, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, Int32(clamping: remaining.milliseconds + 1))
            if fds[0].revents != 0 { control.drainWake() }
        }
        return false
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
