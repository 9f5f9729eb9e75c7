import TetherCore
import TetherStreaming

/// The Codex Worker's job event wire read without a server: one envelope (an SSE `data` payload
/// of `/jobs/{id}/events`, or an entry of a replayed page) in, the normalized events it means
/// out, mapped by ``CodexWorkerEventMapper`` as the job follower does (duplicates dropped).
/// Public for tools that replay a recorded stream, and for the fuzz targets (`Fuzz/`).
public struct CodexWorkerWireDecoder {
    private var mapper = CodexWorkerEventMapper()
    private let keepingRaw: Bool

    /// `keepingRaw`: each event carries its envelope as `raw`. Without it, delta and
    /// `item.started` envelopes are read straight from the bytes (`CodexWorkerHotEnvelope`), as
    /// the follower reads them when `--raw` is not asked for; the events are the same but for `raw`.
    public init(keepingRaw: Bool = true) {
        self.keepingRaw = keepingRaw
    }

    /// The events one SSE `data` payload means; `nil` when it is not JSON (the follower skips it).
    public mutating func events(fromEventData data: String) -> [Event]? {
        let bytes = Array(data.utf8)
        if !keepingRaw, let hot = CodexWorkerHotEnvelope.read(bytes, strings: nil) { return mapper.map(hot) }
        guard let envelope = try? JSONParser.parse(bytes) else { return nil }
        var events = mapper.map(envelope)
        if keepingRaw { for index in events.indices where events[index].raw == nil { events[index].raw = envelope } }
        return events
    }

    /// The approvals still waiting, as `tether approvals` lists them.
    public var pendingApprovals: [Approval] { mapper.pendingApprovals.values.sorted { $0.id < $1.id } }
}
