import Testing
import TetherCore
@testable import TetherGateway

/// The connection state `GET /v1/profiles` reports, with when it began (the page's "backend
/// down since …").
@Suite struct ServedProfileTests {
    @Test func sinceIsWhenTheStateBeganNotWhenItWasLastReported() {
        let profile = ServedProfile(name: "home", backend: SlowApprovalBackend(delay: .zero))
        profile.noteConnection(["state": "connected"], now: 1_000)
        #expect(profile.connectionState["since"] == .string(EventCodec.timestamp(milliseconds: 1_000)))
        profile.noteConnection(["state": "reconnecting", "attempt": 1], now: 5_000)
        profile.noteConnection(["state": "reconnecting", "attempt": 2], now: 9_000)
        #expect(profile.connectionState["since"] == .string(EventCodec.timestamp(milliseconds: 5_000)))
        #expect(profile.connectionState["attempt"] == 2)
        profile.noteConnection(["state": "connected"], now: 12_000)
        #expect(profile.connectionState["since"] == .string(EventCodec.timestamp(milliseconds: 12_000)))
        #expect(profile.json["connection"]?["since"]?.string == "1970-01-01T00:00:12.000Z")
    }
}
