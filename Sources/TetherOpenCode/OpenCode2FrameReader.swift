import TetherCore

/// OpenCode 2.x's event wire read without a server: one SSE `data` payload (from `/api/event`
/// or a session's durable log) in, the normalized events it means out. It decodes with
/// ``OpenCode2WireDecoder`` and maps with ``OpenCode2Mapper``, as the live stream does; what the
/// stream adds needs a server (resuming each active session from its log, joining running
/// sessions, finding a posted prompt's turn). Public for tools that replay a recorded stream,
/// and for the fuzz targets (`Fuzz/`); the 1.x counterpart is ``OpenCodeWireDecoder``.
public struct OpenCode2FrameReader {
    private var mapper = OpenCode2Mapper()
    private let keepingRaw: Bool

    /// `keepingRaw`: each event carries its wire frame as `raw`. Without it, text and reasoning
    /// deltas are read straight from their bytes (`OpenCode2HotFrame`), as the live stream reads
    /// them without `--raw`.
    public init(keepingRaw: Bool = true) {
        self.keepingRaw = keepingRaw
    }

    /// The events one frame means, in order; `nil` when the frame is not a 2.x event (not JSON,
    /// not an object, no `type`, a malformed `durable`), which the stream logs and skips.
    public mutating func events(fromEventData data: String) -> [Event]? {
        let bytes = Array(data.utf8)
        if !keepingRaw, let delta = OpenCode2HotFrame.read(bytes) { return mapper.map(delta) }
        guard let wire = try? OpenCode2WireDecoder.decode(bytes, keepingRaw: keepingRaw) else { return nil }
        guard wire.type != "server.connected" else { return [] }  // the stream's cue to resume sessions
        return mapper.map(wire)
    }
}
