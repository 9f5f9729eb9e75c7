import TetherCodexProtocol
import TetherCore

/// A streamed piece of an item (`item/agentMessage/delta`, `item/commandExecution/outputDelta`,
/// …) inside an `app-server-event`: most of what a busy CodexMonitor stream is made of, read
/// straight from its line (`CodexMonitorHotLine`).
struct CodexMonitorDelta: Sendable, Equatable {
    var workspace: String
    /// The app-server method: it says the part's kind and the field the delta extends.
    var method: String
    var thread: String?
    var turn: String?
    var item: String?
    var delta: String
}
