import Foundation
import Testing
@testable import TetherCore
import TetherStreaming

/// `Event` keeps its fields in one shared box: it must still behave as a value.
@Suite struct EventValueTests {
    private func sample() -> Event {
        Event(.partDelta, session: "s", turn: "t", part: "p", cursor: "c",
              data: ["kind": "text", "field": "text", "delta": "hi"], raw: ["type": "x"], ts: 1)
    }

    /// An event made without a time gets the wall clock's, in whole epoch milliseconds: read
    /// from the system clock, it agrees with Foundation's.
    @Test func anEventIsStampedWithTheWallClockInMilliseconds() {
        let before = (Date().timeIntervalSince1970 * 1000).rounded(.down)
        let stamped = Event(.partDelta).ts
        let after = (Date().timeIntervalSince1970 * 1000).rounded(.up)
        #expect(stamped >= before && stamped <= after, "\(before) <= \(stamped) <= \(after)")
        #expect(stamped == stamped.rounded())
    }

    @Test func changingACopyLeavesTheOriginalAsItWas() {
        let original = sample()
        var copy = original
        copy.ts = 2
        copy.session = "other"
        copy.data["delta"] = "changed"
        copy.profile = "home"
        copy.backend = .openCode
        copy.raw = nil
        #expect(original == sample())
        #expect(original.data["delta"] == "hi")
        #expect(original.profile == nil && original.backend == nil && original.raw != nil)
        #expect(copy.session == "other" && copy.data["delta"] == "changed" && copy.ts == 2)
        #expect(copy != original)
    }

    /// A part event's data is its content with `kind` first, whatever `kind` the content had
    /// and wherever; content the caller keeps is left as it was.
    @Test func aPartEventPutsItsKindFirstAndLeavesKeptContentAlone() {
        let kept: JSONObject = ["text": "hi", "kind": "stale", "role": "user", "kind": "again"]
        let event = Event.part(.partStarted, session: "s", turn: nil, part: "p", kind: .text, content: kept)
        #expect(event.data.keys == ["kind", "text", "role"])
        #expect(event.data == ["kind": "text", "text": "hi", "role": "user"])
        #expect(kept.keys == ["text", "kind", "role", "kind"] && kept["kind"] == "stale")
        let fresh = Event.part(.partCompleted, session: "s", turn: nil, part: "p", kind: .command,
                               content: ["command": "ls", "status": "completed"])
        #expect(fresh.data.keys == ["kind", "command", "status"] && fresh.data["kind"] == "command")
        var object: JSONObject = [:]
        object.setFirst("a", 1)
        object.setFirst("b", 2)
        object.setFirst("a", 3)
        #expect(object.keys == ["a", "b"] && object["a"] == 3)
    }

    @Test func eventsBuiltApartWithTheSameFieldsAreEqual() {
        #expect(sample() == sample())
        var other = sample()
        other.cursor = "d"
        #expect(other != sample())
        other.cursor = "c"
        #expect(other == sample())
    }

    @Test func stampingABatchLeavesEventsHeldElsewhereAlone() {
        let kept = sample()
        let batch = [kept, sample()]
        let stamped = batch.stamped(at: 42)
        #expect(stamped.map(\.ts) == [42, 42])
        #expect(batch.map(\.ts) == [1, 1])
        #expect(kept.ts == 1)
    }
}
