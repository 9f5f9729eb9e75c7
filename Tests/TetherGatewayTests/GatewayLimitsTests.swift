import Testing
@testable import TetherGateway

/// The gateway's limits as plain values: login lifetimes and their streams, the wrong-token
/// back-off, the connection budget, and what counts as loopback.
@Suite struct GatewayLimitsTests {
    final class Closed: @unchecked Sendable {
        var count = 0
    }

    @Test func loginsEndIdleAtTheirLifetimeOrPastTheCapAndCloseTheirStreams() {
        var limits = GatewayAuth.LoginLimits()
        limits.idle = .seconds(10)
        limits.lifetime = .seconds(25)
        limits.maxLogins = 2
        let auth = GatewayAuth(tokens: ["t"], limits: limits)
        let start = ContinuousClock.now
        let cookie = auth.openSession(now: start)
        let closed = Closed()
        let registration = auth.attachStream(to: cookie) { closed.count += 1 }
        #expect(registration != nil)
        // Used every 8 s it stays past the idle limit, until its lifetime ends.
        for step in 1...3 { #expect(auth.acceptsSession(cookie, now: start + .seconds(8 * step)), "\(step)") }
        #expect(closed.count == 0)
        #expect(!auth.acceptsSession(cookie, now: start + .seconds(26)))
        #expect(closed.count == 1)
        #expect(auth.attachStream(to: cookie) { } == nil)

        // Idle: the sweep ends it and closes its stream.
        let idle = auth.openSession(now: start)
        _ = auth.attachStream(to: idle) { closed.count += 1 }
        auth.sweep(now: start + .seconds(9))
        #expect(closed.count == 1)
        auth.sweep(now: start + .seconds(10))
        #expect(closed.count == 2 && !auth.acceptsSession(idle, now: start + .seconds(10)))

        // Past the cap, the login used longest ago ends.
        let a = auth.openSession(now: start)
        let b = auth.openSession(now: start + .seconds(1))
        _ = auth.acceptsSession(a, now: start + .seconds(2))
        let c = auth.openSession(now: start + .seconds(3))
        #expect(auth.liveLogins == 2)
        #expect(auth.acceptsSession(a, now: start + .seconds(3)) && auth.acceptsSession(c, now: start + .seconds(3)))
        #expect(!auth.acceptsSession(b, now: start + .seconds(3)))

        // A stream that ended is forgotten: logout closes nothing more.
        let d = auth.openSession(now: start + .seconds(4))
        let gone = auth.attachStream(to: d) { closed.count += 100 }
        auth.forget(gone!)
        auth.revokeSession(d)
        #expect(closed.count == 2)
    }

    @Test func wrongTokensLockAClientOutLongerEachTime() {
        let limiter = AuthFailureLimiter(limits: .init(freeFailures: 2, firstLockout: .seconds(1), maxLockout: .seconds(3),
                                                       forgetAfter: .seconds(100), maxClients: 2))
        let start = ContinuousClock.now
        #expect(limiter.recordFailure("a", now: start) == .counted(failures: 1))
        #expect(limiter.recordFailure("a", now: start) == .counted(failures: 2))
        #expect(limiter.retryAfter("a", now: start) == nil)
        #expect(limiter.recordFailure("a", now: start) == .lockedOut(failures: 3, for: .seconds(1)))
        #expect(limiter.retryAfter("a", now: start) == .seconds(1))
        #expect(limiter.retryAfter("b", now: start) == nil)
        #expect(limiter.recordFailure("a", now: start + .seconds(1)) == .lockedOut(failures: 4, for: .seconds(2)))
        #expect(limiter.recordFailure("a", now: start + .seconds(3)) == .lockedOut(failures: 5, for: .seconds(3)))
        #expect(limiter.recordFailure("a", now: start + .seconds(6)) == .lockedOut(failures: 6, for: .seconds(3)))
        // Long after, the record starts again; a success clears it.
        #expect(limiter.recordFailure("a", now: start + .seconds(200)) == .counted(failures: 1))
        limiter.recordSuccess("a")
        #expect(limiter.trackedClients == 0)
        // Bounded: a third address pushes out the one that failed longest ago.
        _ = limiter.recordFailure("x", now: start)
        _ = limiter.recordFailure("y", now: start + .seconds(1))
        _ = limiter.recordFailure("z", now: start + .seconds(2))
        #expect(limiter.trackedClients == 2)
    }

    @Test func clientsGetWhatTheDescriptorsLeave() {
        #expect(ConnectionBudget(maxConnections: 1024, profiles: 2, descriptorLimit: nil).limit == 1024)
        #expect(ConnectionBudget(maxConnections: 1024, profiles: 2, descriptorLimit: 1_048_576).limit == 1024)
        let tight = ConnectionBudget(maxConnections: 1024, profiles: 2, descriptorLimit: 1024)
        #expect(tight.limit == 1024 - ConnectionBudget.reserve - 2 * ConnectionBudget.perProfile && tight.descriptorLimit == 1024)
        #expect(ConnectionBudget(maxConnections: 1024, profiles: 1, descriptorLimit: 100).limit == 1)
    }

    @Test func loopbackIsAnAddressNotAPrefix() {
        for text in ["127.0.0.1:1", "127.9.8.7:1", "[::1]:1", "localhost:1", "[::ffff:127.0.0.1]:1"] {
            #expect(ListenAddress(text)?.isLoopback == true, "\(text)")
        }
        for text in ["127.attacker.example:1", "127.0.0.1.nip.io:1", "0.0.0.0:1", "[::]:1", "128.0.0.1:1", "localhost.example:1",
                     "[::ffff:10.0.0.1]:1"] {
            #expect(ListenAddress(text)?.isLoopback == false, "\(text)")
        }
    }
}
