import Synchronization

/// Slows down token guessing, per client address: the first `freeFailures` wrong tokens cost
/// nothing, each one after that locks the client out for twice as long as the last (1 s, 2 s,
/// 4 s … up to `maxLockout`), and a right token clears its record. While locked out, a client's
/// tokens are not even compared: it gets 429 with `Retry-After`. Behind a reverse proxy every
/// client has the proxy's address, so they share one record (the README says so).
///
/// At most `maxClients` addresses are remembered; past that the one that failed longest ago is
/// forgotten, so a flood of addresses cannot grow the gateway's memory.
final class AuthFailureLimiter: Sendable {
    struct Limits: Sendable {
        var freeFailures = 5
        var firstLockout: Duration = .seconds(1)
        var maxLockout: Duration = .seconds(300)
        /// A record with no failure for this long is forgotten.
        var forgetAfter: Duration = .seconds(900)
        var maxClients = 4096
    }

    private struct Record {
        var failures = 0
        var lastFailure: ContinuousClock.Instant
        var lockedUntil: ContinuousClock.Instant?
    }

    /// What a failed attempt led to, for the log line.
    enum Outcome: Equatable {
        case counted(failures: Int)
        case lockedOut(failures: Int, for: Duration)
    }

    let limits: Limits
    private let records = Mutex<[String: Record]>([:])

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// How long `client` must still wait, nil when it may try.
    func retryAfter(_ client: String, now: ContinuousClock.Instant = .now) -> Duration? {
        records.withLock { records in
            guard let until = records[client]?.lockedUntil, until > now else { return nil }
            return until - now
        }
    }

    func recordFailure(_ client: String, now: ContinuousClock.Instant = .now) -> Outcome {
        records.withLock { records in
            var record = records[client] ?? Record(lastFailure: now)
            if now - record.lastFailure >= limits.forgetAfter { record = Record(lastFailure: now) }
            record.failures += 1
            record.lastFailure = now
            var outcome = Outcome.counted(failures: record.failures)
            let beyond = record.failures - limits.freeFailures
            if beyond > 0 {
                let lockout = min(limits.firstLockout * Self.power(beyond - 1), limits.maxLockout)
                record.lockedUntil = now + lockout
                outcome = .lockedOut(failures: record.failures, for: lockout)
            }
            if records[client] == nil, records.count >= limits.maxClients,
               let oldest = records.min(by: { $0.value.lastFailure < $1.value.lastFailure }) {
                records[oldest.key] = nil
            }
            records[client] = record
            return outcome
        }
    }

    func recordSuccess(_ client: String) {
        _ = records.withLock { $0.removeValue(forKey: client) }
    }

    var trackedClients: Int { records.withLock { $0.count } }

    /// 2^exponent, capped where the lockout is long past its maximum anyway.
    private static func power(_ exponent: Int) -> Int {
        1 << min(exponent, 20)
    }
}
