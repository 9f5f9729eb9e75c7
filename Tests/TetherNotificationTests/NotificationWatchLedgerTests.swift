import Foundation
import Testing
import TetherCore
@testable import TetherNotification

/// What a reconnection's history resync may show: only what was pushed since the watch began
/// and not shown yet, and where it may stop paging.
@Suite struct NotificationWatchLedgerTests {
    static func row(_ id: String, at createdAt: Double) -> TetherCore.Notification {
        Notification(id: id, title: id, body: "", createdAt: createdAt)
    }

    @Test func theBaselineIsNotNewsAndRowsOlderThanItEndThePaging() async {
        let ledger = NotificationWatchLedger()
        await ledger.setBaseline([Self.row("b2", at: 200), Self.row("b1", at: 100)])
        let (new, reachedKnown) = await ledger.triage([Self.row("n1", at: 300), Self.row("b2", at: 200), Self.row("b1", at: 100)])
        #expect(new.map(\.id) == ["n1"])
        #expect(reachedKnown)  // b1 is older than the newest baseline row: older pages hold nothing new
        let older = await ledger.triage([Self.row("old", at: 50)])
        #expect(older.new.isEmpty)
        #expect(older.reachedKnown)
    }

    @Test func pushesAlreadyShownAreNotShownAgain() async {
        let ledger = NotificationWatchLedger()
        await ledger.setBaseline([])
        #expect(await ledger.admit("p1"))
        #expect(!(await ledger.admit("p1")))
        let (new, _) = await ledger.triage([Self.row("p2", at: 20), Self.row("p1", at: 10)])
        #expect(new.map(\.id) == ["p2"])
        #expect(!(await ledger.admit("p2")))  // the resync showed it: its late push is a duplicate
    }

    @Test func aConfirmedResyncMovesTheStoppingPoint() async {
        let ledger = NotificationWatchLedger()
        await ledger.setBaseline([Self.row("b", at: 100)])
        _ = await ledger.triage([Self.row("n1", at: 150)])
        await ledger.confirm(through: 150)
        let next = await ledger.triage([Self.row("n2", at: 160), Self.row("n1", at: 150), Self.row("x", at: 120)])
        #expect(next.new.map(\.id) == ["n2"])
        #expect(next.reachedKnown)  // 120 is below the confirmed 150: older pages hold nothing new
    }

    @Test func withoutABaselineNothingOlderThanTheWatchIsNews() async {
        let ledger = NotificationWatchLedger()
        let now = Date().timeIntervalSince1970 * 1000
        let (new, reachedKnown) = await ledger.triage([Self.row("fresh", at: now + 60_000), Self.row("stale", at: now - 60_000)])
        #expect(new.map(\.id) == ["fresh"])
        #expect(reachedKnown)
    }
}
