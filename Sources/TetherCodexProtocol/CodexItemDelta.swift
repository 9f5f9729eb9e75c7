import TetherCore

/// The app-server's delta notifications (`item/agentMessage/delta`, `item/commandExecution/outputDelta`,
/// …): a streamed piece of an item, which the method names the field of.
public enum CodexItemDelta {
    /// The delta methods: the kind of part each extends, and which of its fields.
    public static func target(ofMethod method: String) -> (kind: PartKind, field: String)? {
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
