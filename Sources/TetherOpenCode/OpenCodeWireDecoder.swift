import TetherCore

/// OpenCode's event wire read without a server: one SSE `data` payload (from `/global/event` or
/// `/event`) in, the normalized events it means out. It decodes with ``OpenCodeWireEvent`` and
/// maps with ``OpenCodeEventMapper``, as the live stream does; what the stream adds needs a
/// server (the REST resync on `server.connected` and before a session goes idle, filtering by
/// directory). Public for tools that replay a recorded stream, and for the fuzz targets (`Fuzz/`).
public struct OpenCodeWireDecoder {
    private var mapper = OpenCodeEventMapper()
    private let keepingRaw: Bool

    /// `keepingRaw`: each event carries its wire message as `raw`. Without it, text parts and
    /// their deltas are read straight from the bytes, as the live stream reads them when
    /// `--raw` is not asked for; the events are the same but for `raw`.
    public init(keepingRaw: Bool = true) {
        self.keepingRaw = keepingRaw
    }

    /// The events one SSE `data` payload means, in order, each carrying the wire message as
    /// `raw` (when kept); `nil` when the payload is not an OpenCode event (not JSON, or without a
    /// `type`), which the stream logs and skips.
    public mutating func events(fromEventData data: String) -> [Event]? {
        guard let wire = try? OpenCodeWireEvent.decode(Array(data.utf8), keepingRaw: keepingRaw) else { return nil }
        switch wire.type {
        case "server.connected", "server.heartbeat": return []  // the stream's cues for REST calls
        default: break
        }
        var events = mapper.map(wire)
        for index in events.indices where events[index].raw == nil { events[index].raw = wire.raw }
        return events
    }
}
