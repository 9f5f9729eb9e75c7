import TetherCore

/// A streamed piece of an item (`item.agentMessage.delta`, `item.commandExecution.outputDelta`,
/// `item.fileChange.outputDelta`): most of what a busy job's event stream is made of, read
/// straight from its envelope (`CodexWorkerHotEnvelope`).
struct CodexWorkerDelta: Sendable, Equatable {
    var type: String
    var job: String
    var seq: Int64?
    var thread: String?
    var item: String?
    var delta: String?

    /// The delta envelope types: the kind of part each extends.
    static func kind(ofType type: String) -> PartKind? {
        switch type {
        case "item.agentMessage.delta": return .text
        case "item.commandExecution.outputDelta": return .command
        case "item.fileChange.outputDelta": return .fileChange
        default: return nil
        }
    }
}
