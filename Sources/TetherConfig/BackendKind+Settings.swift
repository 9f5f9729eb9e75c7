import TetherCore

/// What the config knows of each backend.
extension BackendKind {
    /// "a" or "an", for messages such as "an opencode profile".
    var article: String { self == .openCode ? "an" : "a" }

    /// The keys a profile of this backend takes, besides `backend` and `tunnel`, in canonical order.
    public var settingKeys: [String] {
        switch self {
        case .codexWorker: return ["url", "token"]
        case .openCode: return ["url", "username", "password", "directory"]
        case .codex: return ["url", "token", "daemon", "socket", "command", "codex", "directory"]
        case .codexMonitor: return ["address", "token", "workspace"]
        case .notification: return ["url", "peer_id", "desktop"]
        case .gateway: return ["url", "token", "remote_profile"]
        }
    }
}
