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

    /// The delta methods: the kind of part each extends, and which of its fields.
    static func target(ofMethod method: String) -> (kind: PartKind, field: String)? {
        switch method {
        case "item/agentMessage/delta": return (.text, "text")
        case "item/plan/delta": return (.plan, "text")
        case "item/reasoning/summaryTextDelta", "item/reasoning/textDelta": return (.reasoning, "text")
        case "item/commandExecution/outputDelta": return (.command, "output")
        case "item/fileChange/outputDelta": return (.fileChange, "output")
        default: return nil
        }
    }
}
