/// What a part of a turn is. A part is one unit of a turn's output (a message's text, a tool
/// call, a command and its output, a file change…); its id is the backend's.
public enum PartKind: String, Sendable, CaseIterable {
    case text, reasoning, tool, command
    case fileChange = "file_change"
    case patch, plan, todo, file, step
}

public enum PartRole: String, Sendable {
    case user, assistant
}

/// The status of a tool or command part, normalized across backends.
public enum PartStatus: String, Sendable {
    case pending, running, completed, failed, declined
}
