import Foundation
import Logging

/// A local forwarder through an SSH server: every connection to the loopback endpoint becomes a
/// `direct-tcpip` channel to the configured target as the SSH server sees it. Host keys are
/// checked against known_hosts (with opt-in trust-on-first-use pinning), keys come from the agent
/// or an identity file, keepalives detect dead links, and a lost session is re-established with
/// backoff while the endpoint keeps its port.
///
/// One thread per tunnel owns the libssh2 session and every channel; this object only starts and
/// stops it.
public final class SSHTunnel: Sendable {
    public let configuration: Configuration
    private let logger: Logger
    private let control = TunnelControl()

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "ssh"] = "\(configuration.serverName)"
        self.logger = logger
    }

    deinit { stop() }

    /// Opens the listener and establishes the SSH session (connect, host key check,
    /// authentication). Returns the loopback endpoint once the first session is up; throws an
    /// `SSHError` if it cannot be (a first failure is not retried: the caller decides).
    @discardableResult
    public func start() async throws -> (host: String, port: Int) {
        try configuration.validate()
        try control.beginStart()
        let listener: LoopbackListener
        do {
            listener = try LoopbackListener(port: configuration.localPort ?? 0)
        } catch {
            control.finish(.failure(error))
            throw error
        }
        let configuration = configuration
        let logger = logger
        let control = control
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
                let thread = Thread {
                    TunnelRunner(configuration: configuration, logger: logger, control: control, listener: listener)
                        .run(started: started)
                }
                thread.start()
            }
        } onCancel: {
            control.requestStop()
        }
        return (LoopbackListener.host, listener.port)
    }

    /// The loopback endpoint while the tunnel runs (also while it re-establishes its session).
    public var localEndpoint: (host: String, port: Int)? {
        control.localPort.map { (LoopbackListener.host, $0) }
    }

    /// Closes every connection, the session and the listener. Returns once the tunnel's thread
    /// has released them (a graceful SSH disconnect is bounded to about a second).
    public func stop() {
        control.requestStop()
        control.waitUntilFinished(seconds: 5)
    }

    /// Returns when the tunnel was stopped; throws the `SSHError` that made it give up (a host
    /// key mismatch or refused authentication while re-establishing, or a failed start).
    public func waitUntilStopped() async throws {
        try await control.waitForOutcome()
    }
}
