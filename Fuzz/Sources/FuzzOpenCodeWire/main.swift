import FuzzSupport
import TetherCore
import TetherOpenCode

runFuzzer(fuzz)

/// OpenCode's event stream as the adapter reads it: the payload is the SSE body of
/// `/global/event`, cut into chunks by the options byte; each event's data goes through
/// `OpenCodeWireDecoder` (the wire event decoder and the event mapper).
///
/// Oracles: no crash or ASan report; every event carries its wire message as `raw`, encodes as
/// one JSON line that reads back the same, and no part completes twice; a second decoder that
/// keeps no `raw` (reading text parts and deltas straight from the bytes, as the live stream
/// does without `--raw`) means the same events but for `raw`.
func fuzz(_ input: FuzzInput) {
    var decoder = OpenCodeWireDecoder()
    var withoutRaw = OpenCodeWireDecoder(keepingRaw: false)
    var codec = EventCodec(includeRaw: true)
    var completions = CompletionTracker()
    for data in sseEventData(input) {
        guard let events = requireSameButRaw(decoder.events(fromEventData: data), withoutRaw.events(fromEventData: data),
                                             input: String(data.prefix(200))) else { continue }
        for event in events { fuzzRequire(event.raw != nil, "an event without its wire message: \(event.type)") }
        checkEncodable(events, codec: &codec)
        completions.check(events)
    }
}
