import Foundation
import Testing
@testable import TetherGateway

/// Login cookies kept in the log's database: a second opener of the same log — another replica
/// of a fleet, or the same gateway after a restart — honours them, and a logout or an expiry on
/// one is one on the other.
@Suite struct KeptLoginsTests {
    static func logins(_ store: any EventStore) -> KeptLogins {
        KeptLogins(auth: GatewayAuth(tokens: ["a-token-long-enough-to-pass"]), store: store)
    }

    @Test(arguments: StoreKind.allCases) func aLoginIsHonouredByAnotherOpenerAndItsLogoutEndsItThere(_ kind: StoreKind) async throws {
        let place = try StorePlace.fresh(kind)
        let (here, there) = (Self.logins(try await place.open()), Self.logins(try await place.open()))
        let cookie = await here.open()
        #expect(await there.accepts(cookie))
        #expect(there.auth.knownCookies == [cookie])
        #expect(await !there.accepts("not-a-cookie"))
        await there.revoke(cookie)
        #expect(await !here.accepts(cookie))
        #expect(here.auth.liveLogins == 0)
    }

    @Test(arguments: StoreKind.allCases) func anIdleOrOldLoginIsRefusedAndSweptEverywhere(_ kind: StoreKind) async throws {
        let place = try StorePlace.fresh(kind)
        let store = try await place.open()
        let now = Date().timeIntervalSince1970
        try await store.saveLogin(KeptLogins.stored("idle"), at: now - 8 * 86_400, keeping: 10)
        #expect(await !Self.logins(store).accepts("idle"), "unused for 8 days (idle limit 7)")
        #expect(try await store.login(KeptLogins.stored("idle")) == nil, "an expired login is deleted when seen")

        // A login this process knows that another replica's logout removed: the sweep ends it here.
        let (here, there) = (Self.logins(store), Self.logins(try await place.open()))
        let cookie = await here.open()
        try await there.store.deleteLogin(KeptLogins.stored(cookie))
        #expect(here.auth.liveLogins == 1)
        await here.sweep()
        #expect(here.auth.liveLogins == 0)
    }

    /// The database keeps a cookie's SHA-256, not the cookie: reading it does not log anyone in.
    @Test(arguments: StoreKind.allCases) func theDatabaseKeepsNoCookie(_ kind: StoreKind) async throws {
        let store = try await StorePlace.fresh(kind).open()
        let logins = Self.logins(store)
        let cookie = await logins.open()
        #expect(try await store.login(cookie) == nil)
        #expect(try await store.login(KeptLogins.stored(cookie)) != nil)
        // SHA-256 of "abc" (FIPS 180-2's example), as the database would keep that cookie.
        #expect(KeptLogins.stored("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test(arguments: StoreKind.allCases) func theOldestLoginsGoPastTheCap(_ kind: StoreKind) async throws {
        let store = try await StorePlace.fresh(kind).open()
        let now = Date().timeIntervalSince1970
        for index in 0..<5 { try await store.saveLogin("c\(index)", at: now + Double(index), keeping: 3) }
        var kept: [String] = []
        for index in 0..<5 where try await store.login("c\(index)") != nil { kept.append("c\(index)") }
        #expect(kept == ["c2", "c3", "c4"])
    }
}
