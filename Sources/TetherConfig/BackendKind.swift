/// The four backends a profile can talk to (`backend = "…"`).
public enum BackendKind: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    /// The Codex Worker: HTTP REST + SSE, Bearer token.
    case codexWorker = "codex-worker"
    /// The OpenCode server (`opencode serve`): HTTP REST + SSE, Basic auth.
    case openCode = "opencode"
    /// The CodexMonitor daemon: raw TCP, JSON lines.
    case codexMonitor = "codexmonitor"
    /// The ChainlessChain notification skill over the signaling WebSocket.
    case notification

    public var description: String { rawValue }

    /// "a" or "an", for messages such as "an opencode profile".
    var article: String { self == .openCode ? "an" : "a" }

    /// The keys a profile of this backend takes, besides `backend` and `tunnel`, in canonical order.
    public var settingKeys: [String] {
        switch self {
        case .codexWorker: return ["url", "token"]
        case .openCode: return ["url", "username", "password", "directory"]
        case .codexMonitor: return ["address", "token", "workspace"]
        case .notification: return ["url", "peer_id", "desktop"]
        }
    }
}
