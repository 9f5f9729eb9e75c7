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

    /// The ids of the turns `thread` (as `resume_thread` returns it) lists as running, oldest first.
    static func runningTurns(_ thread: JSONValue) -> [String] {
        (thread["turns"]?.array ?? []).filter { ["inProgress", "in_progress"].contains($0["status"]?.string ?? "") }
            .compactMap { $0["id"]?.string }
    }

    /// Why no request of `turn` can be waiting in `thread` (as `resume_thread` returns it), or nil
    /// when one may be. The turn speaks first: a request waits only in its turn while that turn
    /// is `inProgress`, and after an app-server restart Codex reads the turn back `interrupted`
    /// (and a new turn has a new id) — codex-cli 0.163.0. Only when the turns do not say does the
    /// thread's status: a waiting request keeps it `active` (an older app-server called a thread
    /// resumed mid-turn `idle`, so the status does not overrule a running turn). What is not
    /// reported — no status, no turns, a turn without a status — is not held against it.
    static func whyNotWaiting(_ thread: JSONValue, turn: String?) -> String? {
        let id = thread["id"]?.string ?? "?"
        let turns = thread["turns"]?.array ?? []
        let running = runningTurns(thread)
        if let turn {
            if running.contains(turn) { return nil }
            if let status = turns.first(where: { $0["id"]?.string == turn })?["status"]?.string {
                return "its turn \(turn) is \(status)"
            }
            if !running.isEmpty { return "its turn \(turn) is not the one running in thread \(id) (\(running.joined(separator: ", ")))" }
        }
        if let status = thread["status"], !status.isNull, !isActive(thread) {
            return "thread \(id) is not running a turn (\(status["type"]?.string ?? status.string ?? status.serialized))"
        }
        return nil
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
