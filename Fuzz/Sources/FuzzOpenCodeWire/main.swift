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
        let events = decoder.events(fromEventData: data)
        let read = withoutRaw.events(fromEventData: data)
        fuzzRequire((events == nil) == (read == nil), "one decoder read an event the other did not: \(data.prefix(200))")
        guard let events, let read else { continue }
        // Equal but for `raw`, and the receive time (each decoder stamps its own).
        fuzzRequire(events.map(\.withoutRaw).stamped(at: 0) == read.stamped(at: 0),
                    "read without raw, an event differs: \(data.prefix(200))")
        for event in events { fuzzRequire(event.raw != nil, "an event without its wire message: \(event.type)") }
        checkEncodable(events, codec: &codec)
        completions.check(events)
    }
}
