import TetherCore
import TetherStreaming

/// Codex `Thread` objects (from `thread/list`, `thread/start`, `thread/resume`, `thread/started`,
/// directly or as CodexMonitor relays them) as domain sessions. Decoded leniently: older
/// app-servers lack several fields.
public enum CodexThread {
    public static func session(scope: String?, thread: JSONValue) -> Session? {
        guard let id = thread["id"]?.string else { return nil }
        let name = thread["name"]?.string ?? thread["threadName"]?.string
        let preview = thread["preview"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        return Session(id: CodexSessionID.make(scope: scope, thread: id), title: name ?? preview,
                       directory: thread["cwd"]?.string ?? thread["path"]?.string,
                       createdAt: milliseconds(thread["createdAt"]), updatedAt: milliseconds(thread["updatedAt"]),
                       status: status(thread["status"]))
    }

    /// Codex times are unix seconds; the domain speaks milliseconds (values already in ms pass).
    public static func milliseconds(_ value: JSONValue?) -> Double? {
        guard let seconds = value?.double else { return nil }
        return seconds > 100_000_000_000 ? seconds : seconds * 1000
    }

    /// `{type: notLoaded|idle|systemError|active, activeFlags?}` (or a bare string) → status.
    public static func status(_ value: JSONValue?) -> SessionStatus? {
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
    public static func isActive(_ thread: JSONValue) -> Bool {
        (thread["status"]?["type"]?.string ?? thread["status"]?.string) == "active"
    }

    /// The ids of the turns `thread` (as `resume_thread` returns it) lists as running, oldest first.
    public static func runningTurns(_ thread: JSONValue) -> [String] {
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
    public static func whyNotWaiting(_ thread: JSONValue, turn: String?) -> String? {
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
}
