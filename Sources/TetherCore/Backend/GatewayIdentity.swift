/// Who a `tether serve` is, for the gateways that fan it in (`backend = "gateway"` profiles it
/// serves): a random id kept in its log, and the ids of every gateway it fans in itself,
/// directly or through them. A gateway refuses to subscribe to one whose id, or upstream, is its
/// own: that would be a loop. `GET /v1/health` carries both (`gateway`, `upstream`), and so do
/// the headers of every event stream, for a loop that forms while both run.
public struct GatewayIdentity: Sendable, Equatable {
    public var id: String
    public var upstream: [String]

    public init(id: String, upstream: [String] = []) {
        self.id = id
        self.upstream = upstream
    }

    /// The event stream's response headers.
    public static let idHeader = "Tether-Gateway"
    public static let upstreamHeader = "Tether-Upstream"

    /// Every id this gateway stands on: its own and its upstream.
    public var lineage: Set<String> { Set(upstream).union([id]) }
}
