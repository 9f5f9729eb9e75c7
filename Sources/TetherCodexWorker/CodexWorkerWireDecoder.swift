import TetherCore

/// The Codex Worker's job event wire read without a server: one envelope (an SSE `data` payload
/// of `/jobs/{id}/events`, or an entry of a replayed page) in, the normalized events it means
/// out, mapped by ``CodexWorkerEventMapper`` as the job follower does (duplicates dropped).
/// Public for tools that replay a recorded stream, and for the fuzz targets (`Fuzz/`).
public struct CodexWorkerWireDecoder {
    private var mapper = CodexWorkerEventMapper()

    public init() {}

    /// The events one SSE `data` payload means; `nil` when it is not JSON (the follower skips it).
    public mutating func events(fromEventData data: String) -> [Event]? {
        guard let envelope = try? JSONParser.parse(data) else { return nil }
        return mapper.map(envelope)
    }

    /// The approvals still waiting, as `tether approvals` lists them.
    public var pendingApprovals: [Approval] { mapper.pendingApprovals.values.sorted { $0.id < $1.id } }
}
