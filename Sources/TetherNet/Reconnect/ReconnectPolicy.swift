/// Decides whether and when to reconnect a dropped stream, as a pure state machine: the caller
/// reports what happened and executes the returned ``Action``; the policy does no I/O, reads no
/// clock and draws randomness only from the generator it is handed, so it tests deterministically.
///
/// Delays follow a backoff schedule (by default about 1 s, 2 s, 5 s, 10 s, then 30 s for every
/// later attempt), each spread by jitter so that clients dropped together do not return together.
/// A connection that stayed up for ``Configuration/healthyAfter`` restarts the schedule: a link
/// that dies after a good hour reconnects after about a second, not after the cap.
public struct ReconnectPolicy: Sendable {
    /// The schedule and limits.
    public struct Configuration: Sendable, Equatable {
        /// The delays before attempts 1, 2, 3, …; the last one repeats for every later attempt (the cap).
        public var backoff: [Duration]
        /// Relative spread: each delay is scaled by a uniform factor in `1 - jitter ... 1 + jitter`.
        /// Applied to the cap too, so a herd held at the cap stays spread out. `0` turns it off.
        public var jitter: Double
        /// How long a connection must stay up to count as healthy and restart the schedule.
        public var healthyAfter: Duration
        /// Attempts allowed since the last healthy connection; `nil` retries forever.
        public var maxAttempts: Int?

        public init(
            backoff: [Duration] = [.seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30)],
            jitter: Double = 0.2,
            healthyAfter: Duration = .seconds(30),
            maxAttempts: Int? = nil
        ) {
            precondition(!backoff.isEmpty, "the backoff schedule needs at least one delay")
            precondition(jitter >= 0 && jitter < 1, "jitter must be in 0..<1")
            precondition(maxAttempts.map { $0 >= 0 } ?? true, "maxAttempts cannot be negative")
            self.backoff = backoff
            self.jitter = jitter
            self.healthyAfter = healthyAfter
            self.maxAttempts = maxAttempts
        }

        /// The default schedule scaled so that the first delay is `first` (1 s ⇒ the default):
        /// a profile's `reconnect_delay`.
        public static func startingAt(_ first: Duration) -> Configuration {
            let base = Configuration()
            let scale = first / base.backoff[0]
            return Configuration(backoff: base.backoff.map { $0 * scale }, jitter: base.jitter,
                                 healthyAfter: base.healthyAfter, maxAttempts: base.maxAttempts)
        }
    }

    /// Why a connection attempt or a connection ended.
    public enum Failure: Sendable, Equatable {
        /// DNS, connect, TLS, reset, or any other transport error: worth retrying.
        case transportError
        /// The server answered with this HTTP status instead of a stream.
        case httpStatus(Int)
        /// The server ended the stream (a clean EOF still means we lost the feed).
        case streamEnded
        /// No bytes for longer than the liveness timeout: the link is presumed dead.
        case livenessTimeout
    }

    /// Why the policy will not reconnect.
    public enum StopReason: Sendable, Equatable {
        /// HTTP 401 or 403: retrying with the same credentials cannot help.
        case authenticationRefused(status: Int)
        /// HTTP 204: the server asked clients to stop reconnecting (as EventSource does).
        case noContent
        /// The allowed attempts since the last healthy connection all failed.
        case attemptsExhausted(attempts: Int)
    }

    /// What the caller should do next.
    public enum Action: Sendable, Equatable {
        /// Wait `after`, then make reconnection attempt number `attempt` (1-based, since the last healthy connection).
        case reconnect(after: Duration, attempt: Int)
        /// Give up.
        case stop(StopReason)
    }

    /// Where the connection stands, as far as the policy knows.
    public enum State: Sendable, Equatable {
        case idle
        case connecting
        case connected(since: ContinuousClock.Instant)
        /// Waiting out a reconnect delay.
        case waiting
        case stopped(StopReason)
    }

    public let configuration: Configuration
    public private(set) var state: State = .idle
    /// Reconnection attempts made since the last healthy connection.
    public private(set) var attempts = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// A connection attempt is starting.
    public mutating func connecting() {
        guard !isStopped else { return }
        state = .connecting
    }

    /// The connection is up (the stream's response arrived) at `instant`.
    public mutating func connected(at instant: ContinuousClock.Instant) {
        guard !isStopped else { return }
        state = .connected(since: instant)
    }

    /// The connection delivered data: whatever ends it next is a fresh failure, so the schedule
    /// starts over (a server that drops every few events is not one that refuses us).
    public mutating func madeProgress() {
        guard !isStopped else { return }
        attempts = 0
    }

    /// The attempt or the connection failed at `now`; returns what to do, drawing jitter from `generator`.
    public mutating func failed(
        _ failure: Failure, at now: ContinuousClock.Instant, using generator: inout some RandomNumberGenerator
    ) -> Action {
        if case .stopped(let reason) = state { return .stop(reason) }
        switch failure {
        case .httpStatus(let status) where status == 401 || status == 403:
            return stop(.authenticationRefused(status: status))
        case .httpStatus(204):
            return stop(.noContent)
        case .httpStatus, .transportError, .streamEnded, .livenessTimeout:
            break
        }
        if case .connected(let since) = state, now - since >= configuration.healthyAfter {
            attempts = 0
        }
        let next = attempts + 1
        if let limit = configuration.maxAttempts, next > limit {
            return stop(.attemptsExhausted(attempts: attempts))
        }
        attempts = next
        state = .waiting
        return .reconnect(after: delay(forAttempt: next, using: &generator), attempt: next)
    }

    /// As ``failed(_:at:using:)``, with jitter from the system generator.
    public mutating func failed(_ failure: Failure, at now: ContinuousClock.Instant) -> Action {
        var generator = SystemRandomNumberGenerator()
        return failed(failure, at: now, using: &generator)
    }

    /// How long the liveness watchdog waits without a byte before declaring the link dead: a few
    /// heartbeats, so one late heartbeat does not drop a healthy stream.
    public static func livenessTimeout(heartbeat: Duration, multiplier: Int = 3) -> Duration {
        precondition(multiplier > 0, "the multiplier must be positive")
        return heartbeat * multiplier
    }

    /// The liveness timeout for a stream whose server sends something at least every
    /// `heartbeat`: the one configured, but never less than one and a half heartbeats. Shorter,
    /// silence cannot tell a dead link from a healthy one between two heartbeats (a turn waiting
    /// for an approval sends nothing else), and the stream is dropped and reopened again and again.
    public static func liveness(_ configured: Duration, heartbeat: Duration) -> Duration {
        Swift.max(configured, heartbeat * 1.5)
    }

    private var isStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    private mutating func stop(_ reason: StopReason) -> Action {
        state = .stopped(reason)
        return .stop(reason)
    }

    private func delay(forAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let schedule = configuration.backoff
        let base = schedule[Swift.min(attempt - 1, schedule.count - 1)]
        guard configuration.jitter > 0 else { return base }
        let spread = configuration.jitter
        return base * Double.random(in: (1 - spread)...(1 + spread), using: &generator)
    }
}
