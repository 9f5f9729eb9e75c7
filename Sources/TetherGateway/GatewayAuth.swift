import Foundation
import Synchronization

/// Who may use the API: bearer tokens from the config, and the login cookies `POST /v1/login`
/// hands out for them. With no tokens the API is open (only allowed on a loopback listen). A
/// token is never logged, echoed or stored outside memory.
///
/// A login cookie ends when it is logged out, when it went unused for `LoginLimits.idle`, when
/// `LoginLimits.lifetime` passed since the login, or when `maxLogins` newer logins pushed it out;
/// the event streams opened with it are closed at once.
public final class GatewayAuth: Sendable {
    public static let cookieName = "tether_session"

    public struct LoginLimits: Sendable, Equatable {
        public var idle: Duration = .days(7)
        public var lifetime: Duration = .days(30)
        public var maxLogins = 1000
        public init() {}
    }

    private struct Login {
        let started: ContinuousClock.Instant
        var lastUsed: ContinuousClock.Instant
        /// What closes each event stream opened with this cookie, by registration number.
        var closers: [Int: @Sendable () -> Void] = [:]
    }

    private struct State {
        var logins: [String: Login] = [:]
        var nextCloser = 0
    }

    private let tokens: [[UInt8]]
    public let limits: LoginLimits
    private let state = Mutex(State())

    public init(tokens: [String], limits: LoginLimits = LoginLimits()) {
        self.tokens = tokens.map { Array($0.utf8) }
        self.limits = limits
    }

    public var isOpen: Bool { tokens.isEmpty }

    /// Tokens shorter than this are guessable; the gateway warns at start.
    public static let shortTokenBytes = 16

    /// How many configured tokens are shorter than `shortTokenBytes`.
    public var shortTokenCount: Int { tokens.filter { $0.count < Self.shortTokenBytes }.count }

    /// Whether `candidate` is one of the tokens; every token is compared in full, in constant
    /// time for a given length, so timing tells nothing about which bytes matched.
    public func accepts(token candidate: String) -> Bool {
        let bytes = Array(candidate.utf8)
        var matched = false
        for token in tokens { matched = Self.constantTimeEqual(token, bytes) || matched }
        return matched
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        let count = max(a.count, b.count)
        for index in 0..<count {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0
    }

    /// A new cookie value for a browser that presented a valid token. Past `maxLogins`, the
    /// login used longest ago ends.
    public func openSession(now: ContinuousClock.Instant = .now) -> String {
        var generator = SystemRandomNumberGenerator()
        let value = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let ended: [Login] = state.withLock { state in
            var ended = Self.removeExpired(&state, now: now, limits: limits)
            while state.logins.count >= limits.maxLogins,
                  let oldest = state.logins.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                ended.append(state.logins.removeValue(forKey: oldest.key)!)
            }
            state.logins[value] = Login(started: now, lastUsed: now)
            return ended
        }
        Self.closeStreams(of: ended)
        return value
    }

    /// Whether the cookie is live; using it counts as activity.
    public func acceptsSession(_ value: String, now: ContinuousClock.Instant = .now) -> Bool {
        let (live, ended): (Bool, Login?) = state.withLock { state in
            guard let login = state.logins[value] else { return (false, nil) }
            if Self.isExpired(login, now: now, limits: limits) { return (false, state.logins.removeValue(forKey: value)) }
            state.logins[value]?.lastUsed = now
            return (true, nil)
        }
        if let ended { Self.closeStreams(of: [ended]) }
        return live
    }

    /// Takes in a cookie made `age` ago (by another replica, or before a restart) that the log's
    /// database says is live (`KeptLogins`); one already known stays as it is.
    public func adopt(_ value: String, age: Duration, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if state.logins[value] == nil { state.logins[value] = Login(started: now - age, lastUsed: now) }
        }
    }

    /// The cookies this process holds.
    public var knownCookies: [String] { state.withLock { Array($0.logins.keys) } }

    /// Logout: the value gets 401 from now on, and its open event streams are closed.
    public func revokeSession(_ value: String) {
        let ended = state.withLock { $0.logins.removeValue(forKey: value) }
        if let ended { Self.closeStreams(of: [ended]) }
    }

    /// Ends the logins that expired (and closes their streams); the gateway calls it every minute,
    /// so a stream does not outlive its cookie by more than that.
    public func sweep(now: ContinuousClock.Instant = .now) {
        let ended = state.withLock { Self.removeExpired(&$0, now: now, limits: limits) }
        Self.closeStreams(of: ended)
    }

    /// Registers what closes an event stream opened with the cookie `value`; returns nil (and
    /// registers nothing) when that login has already ended. `forget` undoes it when the stream ends.
    public func attachStream(to value: String, close: @escaping @Sendable () -> Void) -> StreamRegistration? {
        state.withLock { state in
            guard state.logins[value] != nil else { return nil }
            let number = state.nextCloser
            state.nextCloser += 1
            state.logins[value]?.closers[number] = close
            return StreamRegistration(cookie: value, number: number)
        }
    }

    public struct StreamRegistration: Sendable {
        let cookie: String
        let number: Int
    }

    public func forget(_ registration: StreamRegistration) {
        state.withLock { _ = $0.logins[registration.cookie]?.closers.removeValue(forKey: registration.number) }
    }

    /// How many logins are live (for tests and logs).
    public var liveLogins: Int { state.withLock { $0.logins.count } }

    private static func isExpired(_ login: Login, now: ContinuousClock.Instant, limits: LoginLimits) -> Bool {
        now - login.lastUsed >= limits.idle || now - login.started >= limits.lifetime
    }

    private static func removeExpired(_ state: inout State, now: ContinuousClock.Instant, limits: LoginLimits) -> [Login] {
        let expired = state.logins.filter { isExpired($0.value, now: now, limits: limits) }
        for key in expired.keys { state.logins[key] = nil }
        return Array(expired.values)
    }

    /// Outside the lock: closing a channel may call back into `forget`.
    private static func closeStreams(of logins: [Login]) {
        for login in logins { for close in login.closers.values { close() } }
    }
}

extension Duration {
    /// `days` days (fractions allowed: the config's `*_days` keys take them).
    public static func days(_ days: Double) -> Duration {
        .milliseconds(Int64((days * 86_400_000).rounded()))
    }

    /// Whole seconds, rounded up, at least 1: what `Retry-After` and a log line say.
    var wholeSeconds: Int {
        let (seconds, attoseconds) = components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}
