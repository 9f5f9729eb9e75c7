import TetherCodexProtocol
import TetherCore

/// Self-contained ids. A CodexMonitor thread is only reachable through its workspace, and an
/// approval is answered by workspace + the app-server's request id, so Tether's ids carry both:
/// a session is `WORKSPACE~THREAD`, an approval `WORKSPACE~THREAD~REQUEST~KIND~TURN~ITEM`
/// (``CodexSessionID`` and ``CodexApprovalID`` with the workspace as their scope).
enum CodexMonitorSessionID {
    static func make(workspace: String, thread: String) -> String {
        CodexSessionID.make(scope: workspace, thread: thread)
    }

    static func parse(_ id: String) -> (workspace: String, thread: String)? {
        CodexSessionID.parse(id, scoped: true).flatMap { parsed in parsed.scope.map { ($0, parsed.thread) } }
    }
}

extension CodexApprovalID {
    /// A CodexMonitor approval id (it starts with the workspace).
    init?(monitorID id: String) { self.init(parsing: id, scoped: true) }

    /// The workspace of a CodexMonitor approval (its scope).
    var workspace: String { scope ?? "" }
}

