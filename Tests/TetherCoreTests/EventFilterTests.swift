import Testing
import TetherCore

/// The one filter every adapter's stream applies.
@Suite struct EventFilterTests {
    func passes(_ filter: inout EventFilter, _ event: Event) -> Bool { filter.admit(event) }

    let text = Event.part(.partCompleted, session: "s1", turn: "t1", part: "p1", kind: .text, content: ["text": "hi"])

    @Test func theLinkAndStreamErrorsAlwaysPass() {
        var filter = EventFilter(session: "s9", turn: "t9")
        #expect(passes(&filter, .connection(.connected)))
        #expect(passes(&filter, .error(TetherError(.unsupported, "no list_threads", retryable: false))))
        #expect(!passes(&filter, .error(TetherError(.failed, "the turn failed"), session: "s1")))
    }

    @Test func sessionAndTurnNarrowTheStream() {
        var filter = EventFilter(session: "s1", turn: "t2")
        #expect(!passes(&filter, text))
        #expect(passes(&filter, .turnStarted(session: "s1", turn: "t2")))
        #expect(!passes(&filter, .turnStarted(session: "s2", turn: "t2")))
        var any = EventFilter(session: nil)
        #expect(passes(&any, text) && passes(&any, .turnStarted(session: "s2", turn: "t9")))
    }

    @Test func sendFollowKeepsToTheTurnStartedAfterThePromptAndEndsWithIt() {
        var filter = EventFilter(session: "s1", untilTurnCompletes: true)
        // Before the prompt went out, a turn that starts is someone else's.
        #expect(!passes(&filter, .turnStarted(session: "s1", turn: "t0")))
        filter.promptWasSent()
        #expect(passes(&filter, .turnStarted(session: "s1", turn: "t1")))
        #expect(filter.targetTurn == "t1")
        #expect(passes(&filter, text))
        #expect(passes(&filter, .sessionStatus("s1", .busy)))
        #expect(!passes(&filter, .part(.partCompleted, session: "s1", turn: "t0", part: "p0", kind: .text, content: [:])))
        let kept = filter.admit([
            .turnCompleted(session: "s1", turn: "t1", outcome: .completed),
            .turnStarted(session: "s1", turn: "t2"),
        ])
        #expect(kept.map(\.type) == [.turnCompleted])
        #expect(filter.isDone)
        #expect(!passes(&filter, .connection(.connected)))
    }

    @Test func aTurnNamedAtSendingIsTheTarget() {
        var filter = EventFilter(session: "s1", untilTurnCompletes: true)
        filter.promptWasSent(turn: "t7")
        #expect(!passes(&filter, .turnStarted(session: "s1", turn: "t6")))
        #expect(passes(&filter, .turnStarted(session: "s1", turn: "t7")))
    }

    /// Filtered in place from a mark, the events before it untouched: the same events, in the
    /// same order, as filtering a copy (the filter's state moves alike).
    @Test func admittingInPlaceKeepsWhatAdmittingACopyKeeps() {
        let before: [Event] = [.connection(.connected), text]
        let mixed: [Event] = [
            text, .turnStarted(session: "s2", turn: "t1"), .connection(.connected),
            .part(.partStarted, session: "s1", turn: "t1", part: "p2", kind: .text, content: [:]),
            .turnCompleted(session: "s1", turn: "t1", outcome: .completed), .turnStarted(session: "s1", turn: "t2"),
        ]
        for filterOf in [{ EventFilter(session: "s1") }, { EventFilter(session: "s1", untilTurnCompletes: true) }] {
            var byCopy = filterOf(), inPlace = filterOf()
            byCopy.promptWasSent(turn: "t1")
            inPlace.promptWasSent(turn: "t1")
            let kept = byCopy.admit(mixed)
            var gathered = before + mixed
            inPlace.admit(&gathered, from: before.count)
            #expect(gathered.map(\.type) == (before + kept).map(\.type))
            #expect(gathered.map(\.session) == (before + kept).map(\.session))
            #expect(inPlace.isDone == byCopy.isDone)
        }
        var none = EventFilter(session: "s9")
        var gathered = before + [text, text]
        none.admit(&gathered, from: 2)
        #expect(gathered.count == 2)
    }
}
