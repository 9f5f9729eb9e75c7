/// The four backends Tether speaks; the raw value is a profile's `backend = "..."`.
public enum BackendKind: String, Sendable, CaseIterable, Codable {
    case codexWorker = "codex-worker"
    case opencode
    case codexmonitor
    case notification
}
