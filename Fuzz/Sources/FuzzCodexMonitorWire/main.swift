import FuzzSupport
import TetherCodexMonitor
import TetherCore
import TetherNet

runFuzzer(fuzz)

/// The CodexMonitor daemon's TCP stream as the adapter reads it: the payload is the byte
/// stream, cut into chunks by the options byte, framed by `LineFramer` (with the backend's
/// 1 MiB line limit), and each line goes through `CodexMonitorWireDecoder` (JSON-RPC
/// classification, the event mapper, and the `resume_thread` reconcile and history readers).
///
/// Oracles: no crash or ASan report; every event encodes as one JSON line that reads back the
/// same; every pending approval belongs to a session; a second decoder that keeps no `raw`
/// (reading item deltas and `item/started` straight from the bytes, as the live stream does
/// without `--raw`)
/// means the same events but for `raw`.
func fuzz(_ input: FuzzInput) {
    var framer = LineFramer(maxLineLength: 1 << 20)
    var decoder = CodexMonitorWireDecoder(workspace: "ws-1")
    var withoutRaw = CodexMonitorWireDecoder(workspace: "ws-1", keepingRaw: false)
    var codec = EventCodec(includeRaw: true)
    for chunk in input.chunks() {
        for case .line(let line) in framer.feed(chunk) {
            guard let events = requireSameButRaw(decoder.events(fromLine: line), withoutRaw.events(fromLine: line),
                                                 input: String(decoding: line.prefix(200), as: UTF8.self)) else { continue }
            checkEncodable(events, codec: &codec)
        }
    }
    for approval in decoder.pendingApprovals {
        fuzzRequire(approval.session != nil && !approval.id.isEmpty, "a pending approval without a session or id: \(approval)")
    }
}
