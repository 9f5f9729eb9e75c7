import Testing
import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// `send --follow`'s prompt over a resync, as both Codex backends judge it.
@Suite struct CodexPromptTrackerTests {
    let idle: JSONValue = ["type": "idle"]
    let active: JSONValue = ["type": "active", "activeFlags": []]

    @Test func theFirstTurnTheThreadLackedBeforeThePromptIsItsTurn() {
        var tracker = CodexPromptTracker()
        #expect(tracker.read(turns: ["t1"], status: idle, turnKnown: false) == .nothing)
        tracker.posting()
        #expect(tracker.read(turns: ["t1", "t2", "t3"], status: active, turnKnown: false) == .turn("t2"))
        #expect(tracker.posted)
    }

    @Test func anIdleThreadWithNoNewTurnMeansThePromptWasLostAndGoesOutAgain() {
        var tracker = CodexPromptTracker()
        _ = tracker.read(turns: ["t1"], status: idle, turnKnown: false)
        tracker.posting()
        #expect(tracker.read(turns: ["t1"], status: active, turnKnown: false) == .nothing)
        #expect(tracker.posted, "a busy thread may still start the turn")
        #expect(tracker.read(turns: ["t1"], status: idle, turnKnown: false) == .lost)
        #expect(!tracker.posted)
    }

    @Test func nothingIsJudgedBeforeThePromptOrOnceItsTurnIsKnown() {
        var tracker = CodexPromptTracker()
        #expect(tracker.read(turns: ["t1", "t2"], status: idle, turnKnown: false) == .nothing)
        tracker.posting()
        #expect(tracker.read(turns: ["t1", "t2", "t3"], status: idle, turnKnown: true) == .nothing)
        #expect(tracker.posted)
    }

    /// A prompt sent before the target was ever read: there is nothing to tell its turn from
    /// another's, so it is left to the prompt's own answer (never sent twice).
    @Test func aPromptSentBeforeTheThreadWasReadIsNotSecondGuessed() {
        var tracker = CodexPromptTracker()
        tracker.posting()
        #expect(tracker.read(turns: ["t1"], status: active, turnKnown: false) == .nothing)
        #expect(tracker.read(turns: ["t1"], status: idle, turnKnown: false) == .nothing)
        #expect(tracker.posted)
    }
}
