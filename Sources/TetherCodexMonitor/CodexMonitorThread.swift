import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// Which threads belong to a workspace: CodexMonitor's own rule (see ``CodexThread`` for the
/// threads themselves).
enum CodexMonitorThread {
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
