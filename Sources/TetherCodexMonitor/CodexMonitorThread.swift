import TetherCore

/// Codex `Thread` objects (from `list_threads`, `start_thread`, `resume_thread`, `thread/started`)
/// as domain sessions. Decoded leniently: older app-servers lack several fields.
enum CodexMonitorThread {
    static func session(workspace: String, thread: JSONValue) -> Session? {
        guard let id = thread["id"]?.string else { return nil }
        let name = thread["name"]?.string ?? thread["threadName"]?.string
        let preview = thread["preview"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        return Session(id: CodexMonitorSessionID.make(workspace: workspace, thread: id), title: name ?? preview,
                       directory: thread["cwd"]?.string ?? thread["path"]?.string,
                       createdAt: milliseconds(thread["createdAt"]), updatedAt: milliseconds(thread["updatedAt"]),
                       status: status(thread["status"]))
    }

    /// Codex times are unix seconds; the domain speaks milliseconds (values already in ms pass).
    static func milliseconds(_ value: JSONValue?) -> Double? {
        guard let seconds = value?.double else { return nil }
        return seconds > 100_000_000_000 ? seconds : seconds * 1000
    }

    /// `{type: notLoaded|idle|systemError|active, activeFlags?}` (or a bare string) → status.
    static func status(_ value: JSONValue?) -> SessionStatus? {
        switch value?["type"]?.string ?? value?.string {
        case "idle", "notLoaded": return .idle
        case "active":
            let flags = (value?["activeFlags"]?.array ?? []).compactMap(\.string)
            return flags.contains("waitingOnApproval") ? .waitingApproval : .busy
        case "systemError": return .error
        default: return nil
        }
    }

    /// Whether Codex says a turn is running in the thread.
    static func isActive(_ thread: JSONValue) -> Bool {
        (thread["status"]?["type"]?.string ?? thread["status"]?.string) == "active"
    }

    /// `thread/list` is not filtered by directory (one app-server serves every workspace), so
    /// the desktop keeps the threads whose `cwd` is the workspace's path; so does Tether.
    static func belongs(_ thread: JSONValue, toPath path: String) -> Bool {
        guard let cwd = thread["cwd"]?.string else { return false }
        return normalize(cwd) == normalize(path)
    }

    static func normalize(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }
}

/// A CodexMonitor workspace (`WorkspaceInfo`): a project directory with its own app-server session.
struct CodexMonitorWorkspace: Equatable, Sendable {
    var id: String
    var name: String
    var path: String
    var connected: Bool

    init(id: String, name: String, path: String, connected: Bool) {
        self.id = id
        self.name = name
        self.path = path
        self.connected = connected
    }

    init?(_ value: JSONValue) {
        guard let id = value["id"]?.string, let path = value["path"]?.string else { return nil }
        self.init(id: id, name: value["name"]?.string ?? id, path: path, connected: value["connected"]?.bool ?? false)
    }

    var summary: String { "\(id) (\(name), \(path)\(connected ? "" : ", not connected"))" }

    var json: JSONValue {
        ["id": .string(id), "name": .string(name), "path": .string(path), "connected": .bool(connected)]
    }
}
