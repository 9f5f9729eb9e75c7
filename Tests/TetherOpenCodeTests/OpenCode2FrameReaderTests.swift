import Foundation
import Testing
import TetherCore
@testable import TetherOpenCode

/// `OpenCode2FrameReader` (the public replay of 2.x frames the fuzz target drives): with and
/// without `raw`, the same events. The fuzzer's first find: a frame read without `raw` still
/// carried `raw: null` (`JSONValue` takes `nil` as its own null in a `cond ? value : nil`).
@Suite struct OpenCode2FrameReaderTests {
    @Test(arguments: OpenCode2TranscriptTests.names) func readingWithoutRawMeansTheSameEvents(_ name: String) throws {
        var kept = OpenCode2FrameReader()
        var read = OpenCode2FrameReader(keepingRaw: false)
        for frame in try Transcript.frames(name) {
            let data = frame.serialized
            let withRaw = try #require(Optional(kept.events(fromEventData: data)) ?? nil)
            let without = try #require(Optional(read.events(fromEventData: data)) ?? nil)
            #expect(withRaw.allSatisfy { $0.raw != nil })
            let stripped = withRaw.map { event in
                var event = event
                event.raw = nil
                return event
            }
            var codec = EventCodec(includeRaw: true)
            let lines = { (events: [Event]) in events.stamped(at: 0).map { String(decoding: codec.encode($0), as: UTF8.self) } }
            #expect(lines(stripped) == lines(without))
        }
    }
}
