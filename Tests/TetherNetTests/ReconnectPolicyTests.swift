import Testing
import TetherTestSupport
@testable import TetherNet

@Suite("ReconnectPolicy")
struct ReconnectPolicyTests {
    typealias Action = ReconnectPolicy.Action

    static let noJitter = ReconnectPolicy.Configuration(jitter: 0)
    static let schedule: [Duration] = [.seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30)]

    /// A generator that always returns the same word: pins jitter to one end of its range.
    struct ConstantRandom: RandomNumberGenerator {
        let value: UInt64
        mutating func next() -> UInt64 { value }
    }

    /// The policy after `count` consecutive failures, and the actions it returned.
    static func failing(
        _ count: Int, _ configuration: ReconnectPolicy.Configuration = noJitter, at now: ContinuousClock.Instant = .now
    ) -> (ReconnectPolicy, [Action]) {
        var policy = ReconnectPolicy(configuration: configuration)
        var random = SeededRandom(seed: 7)
        var actions: [Action] = []
        for _ in 0..<count {
            policy.connecting()
            actions.append(policy.failed(.transportError, at: now, using: &random))
        }
        return (policy, actions)
    }

    @Test func aConnectionThatDeliveredRestartsTheSchedule() {
        var (policy, _) = Self.failing(4)
        policy.connecting()
        policy.connected(at: .now)
        policy.madeProgress()
        var random = SeededRandom(seed: 1)
        #expect(policy.failed(.streamEnded, at: .now, using: &random) == .reconnect(after: .seconds(1), attempt: 1))
        // Without progress, the next failure climbs again.
        #expect(policy.failed(.streamEnded, at: .now, using: &random) == .reconnect(after: .seconds(2), attempt: 2))
    }

    // MARK: - Schedule

    /// (attempt, delay)
    static let expectedSchedule: [(Int, Duration)] = [
        (1, .seconds(1)), (2, .seconds(2)), (3, .seconds(5)), (4, .seconds(10)), (5, .seconds(30)), (6, .seconds(30)),
        (12, .seconds(30)), (100, .seconds(30)),
    ]

    @Test(arguments: expectedSchedule)
    func scheduleWithoutJitter(attempt: Int, delay: Duration) {
        let (_, actions) = Self.failing(attempt)
        #expect(actions.last == .reconnect(after: delay, attempt: attempt))
    }

    @Test func aProfilesReconnectDelayScalesTheWholeSchedule() {
        let scaled = ReconnectPolicy.Configuration.startingAt(.milliseconds(50))
        #expect(scaled.backoff == [.milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .milliseconds(1500)])
        #expect(scaled.jitter == ReconnectPolicy.Configuration().jitter)
        #expect(ReconnectPolicy.Configuration.startingAt(.seconds(1)) == ReconnectPolicy.Configuration())
    }

    @Test func scheduleCountsAttemptsFromOne() {
        let (policy, actions) = Self.failing(6)
        #expect(actions == zip(1...6, Self.schedule + [.seconds(30)]).map { .reconnect(after: $1, attempt: $0) })
        #expect(policy.attempts == 6)
        #expect(policy.state == .waiting)
    }

    /// With ±20 % jitter every delay stays within its bounds, including the cap, and does vary.
    @Test(arguments: 0..<16 as Range<UInt64>)
    func jitterStaysWithinBounds(seed: UInt64) {
        var policy = ReconnectPolicy()
        var random = SeededRandom(seed: seed)
        let now = ContinuousClock.now
        var delays: [Duration] = []
        for attempt in 1...40 {
            guard case .reconnect(let delay, let reported) = policy.failed(.streamEnded, at: now, using: &random) else {
                Issue.record("attempt \(attempt) did not reconnect")
                return
            }
            #expect(reported == attempt)
            let base = Self.schedule[min(attempt - 1, Self.schedule.count - 1)]
            #expect(delay >= base * 0.8 && delay <= base * 1.2, "attempt \(attempt): \(delay)")
            delays.append(delay)
        }
        #expect(Set(delays.suffix(30)).count > 1, "jitter spreads the capped delays")
    }

    @Test(arguments: [(UInt64(1), 0.8), (UInt64.max, 1.2)])
    func jitterExtremesWithAFixedGenerator(word: UInt64, factor: Double) {
        var policy = ReconnectPolicy(configuration: .init(jitter: 0.2))
        var random = ConstantRandom(value: word)
        let now = ContinuousClock.now
        for base in Self.schedule {
            guard case .reconnect(let delay, _) = policy.failed(.transportError, at: now, using: &random) else {
                Issue.record("did not reconnect")
                return
            }
            #expect(abs((delay / base) - factor) < 0.001, "\(delay) for \(base)")
        }
    }

    @Test func theSameSeedGivesTheSameSchedule() {
        func delays(seed: UInt64) -> [Action] {
            var policy = ReconnectPolicy()
            var random = SeededRandom(seed: seed)
            let now = ContinuousClock.now
            return (0..<10).map { _ in policy.failed(.livenessTimeout, at: now, using: &random) }
        }
        #expect(delays(seed: 42) == delays(seed: 42))
        #expect(delays(seed: 42) != delays(seed: 43))
    }

    @Test func aCustomScheduleRepeatsItsLastDelay() {
        let (_, actions) = Self.failing(3, .init(backoff: [.milliseconds(100), .milliseconds(250)], jitter: 0))
        #expect(actions == [.reconnect(after: .milliseconds(100), attempt: 1), .reconnect(after: .milliseconds(250), attempt: 2),
                            .reconnect(after: .milliseconds(250), attempt: 3)])
    }

    // MARK: - Healthy period

    struct UptimeCase: Sendable, CustomTestStringConvertible {
        let uptime: Duration
        let expected: Action
        var testDescription: String { "up \(uptime)" }
    }

    /// After four quick failures (next would be attempt 5, 30 s), a connection that stayed up for
    /// the healthy period restarts the schedule; one that died sooner does not.
    static let uptimeCases: [UptimeCase] = [
        UptimeCase(uptime: .zero, expected: .reconnect(after: .seconds(30), attempt: 5)),
        UptimeCase(uptime: .seconds(5), expected: .reconnect(after: .seconds(30), attempt: 5)),
        UptimeCase(uptime: .seconds(30) - .milliseconds(1), expected: .reconnect(after: .seconds(30), attempt: 5)),
        UptimeCase(uptime: .seconds(30), expected: .reconnect(after: .seconds(1), attempt: 1)),
        UptimeCase(uptime: .seconds(31), expected: .reconnect(after: .seconds(1), attempt: 1)),
        UptimeCase(uptime: .seconds(3600), expected: .reconnect(after: .seconds(1), attempt: 1)),
    ]

    @Test(arguments: uptimeCases)
    func healthyPeriodResetsTheSchedule(_ testCase: UptimeCase) {
        let start = ContinuousClock.now
        var (policy, _) = Self.failing(4, at: start)
        policy.connecting()
        policy.connected(at: start)
        #expect(policy.state == .connected(since: start))
        #expect(policy.failed(.streamEnded, at: start + testCase.uptime) == testCase.expected)
    }

    @Test func aConfiguredHealthyPeriod() {
        let start = ContinuousClock.now
        var (policy, _) = Self.failing(3, .init(jitter: 0, healthyAfter: .seconds(5)), at: start)
        policy.connected(at: start)
        #expect(policy.failed(.livenessTimeout, at: start + .seconds(5)) == .reconnect(after: .seconds(1), attempt: 1))
    }

    @Test func failingWhileConnectingNeverCountsAsHealthy() {
        let start = ContinuousClock.now
        var (policy, _) = Self.failing(2, at: start)
        policy.connecting()
        #expect(policy.failed(.transportError, at: start + .seconds(3600)) == .reconnect(after: .seconds(5), attempt: 3))
    }

    // MARK: - Failure classes

    static let retryableFailures: [ReconnectPolicy.Failure] = [
        .transportError, .streamEnded, .livenessTimeout,
        .httpStatus(500), .httpStatus(502), .httpStatus(503), .httpStatus(504), .httpStatus(429), .httpStatus(404),
        .httpStatus(200),
    ]

    @Test(arguments: retryableFailures)
    func retryableFailuresReconnect(_ failure: ReconnectPolicy.Failure) {
        var policy = ReconnectPolicy(configuration: Self.noJitter)
        #expect(policy.failed(failure, at: .now) == .reconnect(after: .seconds(1), attempt: 1))
    }

    static let stoppingStatuses: [(Int, ReconnectPolicy.StopReason)] = [
        (401, .authenticationRefused(status: 401)),
        (403, .authenticationRefused(status: 403)),
        (204, .noContent),
    ]

    /// These stop at once, even mid-schedule, and the policy stays stopped.
    @Test(arguments: stoppingStatuses)
    func statusesThatStop(status: Int, reason: ReconnectPolicy.StopReason) {
        var (policy, _) = Self.failing(2)
        #expect(policy.failed(.httpStatus(status), at: .now) == .stop(reason))
        #expect(policy.state == .stopped(reason))
        policy.connecting()
        policy.connected(at: .now)
        #expect(policy.state == .stopped(reason))
        #expect(policy.failed(.transportError, at: .now) == .stop(reason))
    }

    // MARK: - Attempt limit

    @Test(arguments: [0, 1, 3])
    func maxAttemptsGivesUp(limit: Int) {
        let (failedPolicy, actions) = Self.failing(limit, .init(jitter: 0, maxAttempts: limit))
        var policy = failedPolicy
        #expect(actions == Array(zip(1...max(limit, 1), Self.schedule).map { .reconnect(after: $1, attempt: $0) }.prefix(limit)))
        #expect(policy.failed(.transportError, at: .now) == .stop(.attemptsExhausted(attempts: limit)))
        #expect(policy.failed(.transportError, at: .now) == .stop(.attemptsExhausted(attempts: limit)))
    }

    @Test func aHealthyConnectionRestoresTheAttemptBudget() {
        let start = ContinuousClock.now
        var (policy, _) = Self.failing(2, .init(jitter: 0, maxAttempts: 2), at: start)
        policy.connected(at: start)
        #expect(policy.failed(.streamEnded, at: start + .seconds(60)) == .reconnect(after: .seconds(1), attempt: 1))
    }

    @Test func withoutALimitItRetriesForever() {
        let (_, actions) = Self.failing(1000)
        #expect(actions.last == .reconnect(after: .seconds(30), attempt: 1000))
    }

    // MARK: - Liveness

    /// (heartbeat, multiplier, timeout)
    static let livenessCases: [(Duration, Int, Duration)] = [
        (.seconds(10), 3, .seconds(30)),
        (.seconds(15), 2, .seconds(30)),
        (.milliseconds(500), 3, .milliseconds(1500)),
        (.seconds(30), 1, .seconds(30)),
    ]

    @Test(arguments: livenessCases)
    func livenessTimeout(heartbeat: Duration, multiplier: Int, timeout: Duration) {
        #expect(ReconnectPolicy.livenessTimeout(heartbeat: heartbeat, multiplier: multiplier) == timeout)
    }

    @Test func livenessTimeoutDefaultsToThreeHeartbeats() {
        #expect(ReconnectPolicy.livenessTimeout(heartbeat: .seconds(10)) == .seconds(30))
    }

    @Test func stateFollowsTheConnection() {
        var policy = ReconnectPolicy(configuration: Self.noJitter)
        #expect(policy.state == .idle)
        policy.connecting()
        #expect(policy.state == .connecting)
        let now = ContinuousClock.now
        policy.connected(at: now)
        #expect(policy.state == .connected(since: now))
        _ = policy.failed(.streamEnded, at: now)
        #expect(policy.state == .waiting)
    }

    /// A profile's liveness below the backend's heartbeat cannot tell quiet from dead: never
    /// less than one and a half heartbeats; above that, as configured.
    @Test func livenessIsNeverShorterThanOneAndAHalfHeartbeats() {
        #expect(ReconnectPolicy.liveness(.seconds(10), heartbeat: .seconds(15)) == .milliseconds(22_500))
        #expect(ReconnectPolicy.liveness(.seconds(2), heartbeat: .seconds(10)) == .seconds(15))
        #expect(ReconnectPolicy.liveness(.seconds(45), heartbeat: .seconds(15)) == .seconds(45))
    }
}
