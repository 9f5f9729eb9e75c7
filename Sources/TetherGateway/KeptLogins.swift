import Foundation
import TetherDigest

/// Login cookies kept in the log's database (gateway.md, "A fleet"): every replica honours a
/// cookie another made, a logout or an expiry on one ends it on all, and a restart keeps it.
/// `GatewayAuth` still holds each cookie this process has seen, with the event streams opened
/// with it (closed when it ends); the database decides whether it is live. Should the database
/// not answer, the cookies this process knows keep working. The database holds each cookie's
/// SHA-256, never the cookie: whoever reads it cannot log in with what they read.
struct KeptLogins: Sendable {
    let auth: GatewayAuth
    let store: any EventStore
    /// A cookie's last use is written at most this often (each request is a use).
    static let touchInterval: Double = 60

    /// A new cookie, kept.
    func open() async -> String {
        let cookie = auth.openSession()
        let now = Date().timeIntervalSince1970
        try? await store.saveLogin(Self.stored(cookie), at: now, keeping: auth.limits.maxLogins)
        return cookie
    }

    /// Whether `cookie` is live; using it counts as activity.
    func accepts(_ cookie: String) async -> Bool {
        let record: LoginRecord?
        do {
            record = try await store.login(Self.stored(cookie))
        } catch {
            return auth.acceptsSession(cookie)
        }
        let now = Date().timeIntervalSince1970
        guard let record, !record.isExpired(at: now, limits: auth.limits) else {
            auth.revokeSession(cookie)
            if record != nil { try? await store.deleteLogin(Self.stored(cookie)) }
            return false
        }
        auth.adopt(cookie, age: .seconds(now - record.started))
        if now - record.lastUsed >= Self.touchInterval { try? await store.touchLogin(Self.stored(cookie), at: now) }
        return auth.acceptsSession(cookie)
    }

    /// Logout, here and on every replica.
    func revoke(_ cookie: String) async {
        auth.revokeSession(cookie)
        try? await store.deleteLogin(Self.stored(cookie))
    }

    /// Ends expired logins in the database, and here those another replica ended (closing their
    /// streams); the gateway calls it every minute.
    func sweep() async {
        auth.sweep()
        let now = Date().timeIntervalSince1970
        let limits = auth.limits
        try? await store.deleteLogins(usedBefore: now - limits.idle.seconds, startedBefore: now - limits.lifetime.seconds)
        for cookie in auth.knownCookies {
            // Gone from the database (a logout elsewhere, or expired); kept when it did not answer.
            do {
                if try await store.login(Self.stored(cookie)) == nil { auth.revokeSession(cookie) }
            } catch {
                continue
            }
        }
    }

    /// What the database keeps for `cookie`: its SHA-256, in hex.
    static func stored(_ cookie: String) -> String {
        Digest.hex(Digest.sha256(Array(cookie.utf8)))
    }
}

/// One kept login: when it began and when it was last used (seconds since 1970, wall clock: the
/// replicas are other processes).
public struct LoginRecord: Sendable, Equatable {
    public let started: Double
    public let lastUsed: Double

    func isExpired(at now: Double, limits: GatewayAuth.LoginLimits) -> Bool {
        now - lastUsed >= limits.idle.seconds || now - started >= limits.lifetime.seconds
    }
}

extension Duration {
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
