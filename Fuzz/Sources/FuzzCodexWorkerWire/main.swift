import FuzzSupport
import TetherCodexWorker
import TetherCore

runFuzzer(fuzz)

/// The Codex Worker's job event stream as the adapter reads it: the payload is the SSE body of
/// `/jobs/{id}/events`, cut into chunks by the options byte; each event's data goes through
/// `CodexWorkerWireDecoder` (envelope parsing and the event mapper).
///
/// Oracles: no crash or ASan report; every event encodes as one JSON line that reads back the
/// same; no part completes twice; every pending approval has an id and a turn; a second decoder
/// that keeps no `raw` (reading delta and `item.started` envelopes straight from the bytes, as
/// the follower does without `--raw`) means the same events but for `raw`.
func fuzz(_ input: FuzzInput) {
    var decoder = CodexWorkerWireDecoder()
    var withoutRaw = CodexWorkerWireDecoder(keepingRaw: false)
    var codec = EventCodec(includeRaw: true)
    var completions = CompletionTracker()
    for data in sseEventData(input) {
        guard let events = requireSameButRaw(decoder.events(fromEventData: data), withoutRaw.events(fromEventData: data),
                                             input: String(data.prefix(200))) else { continue }
        checkEncodable(events, codec: &codec)
        completions.check(events)
    }
    for approval in decoder.pendingApprovals {
        fuzzRequire(!approval.id.isEmpty && approval.turn != nil, "a pending approval without an id or turn: \(approval)")
    }
}
