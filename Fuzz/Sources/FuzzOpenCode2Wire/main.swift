import FuzzSupport
import TetherCore
import TetherOpenCode

runFuzzer(fuzz)

/// OpenCode 2.x's event stream as the adapter reads it: the payload is the SSE body of
/// `/api/event` (or a session's durable log), cut into chunks by the options byte; each event's
/// data goes through `OpenCode2FrameReader` (the 2.x frame decoder and mapper).
///
/// Oracles: no crash or ASan report; every event encodes as one JSON line that reads back the
/// same, and no part completes twice (a durable frame seen again, as after a resume, is taken
/// once); a second reader that keeps no `raw` (reading text and reasoning deltas straight from
/// the bytes, as the live stream does without `--raw`) means the same events but for `raw`.
func fuzz(_ input: FuzzInput) {
    var reader = OpenCode2FrameReader()
    var withoutRaw = OpenCode2FrameReader(keepingRaw: false)
    var codec = EventCodec(includeRaw: true)
    var completions = CompletionTracker()
    for data in sseEventData(input) {
        guard let events = requireSameButRaw(reader.events(fromEventData: data), withoutRaw.events(fromEventData: data),
                                             input: String(data.prefix(200))) else { continue }
        checkEncodable(events, codec: &codec)
        completions.check(events)
    }
}
