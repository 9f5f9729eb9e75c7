import TetherCore
import TetherStreaming

/// How a tool, command or file-change part looks as an ACP tool call: its `kind`, `title`,
/// `status` and `content`. Pure functions of the part's normalized `data`.
enum ToolCallPresentation {
    /// ACP `ToolKind` for a part: commands execute, file changes edit; tools by their name.
    static func kind(of data: JSONObject) -> String {
        switch data["kind"]?.string {
        case PartKind.command.rawValue: return "execute"
        case PartKind.fileChange.rawValue, PartKind.patch.rawValue: return "edit"
        default: break
        }
        let tool = (data["tool"]?.string ?? "").lowercased()
        switch tool {
        case "read", "view", "cat": return "read"
        case "edit", "write", "patch", "apply_patch", "multiedit": return "edit"
        case "grep", "glob", "list", "ls", "find", "codesearch", "web_search", "websearch": return "search"
        case "webfetch", "fetch": return "fetch"
        case "bash", "shell", "exec": return "execute"
        case "delete", "rm": return "delete"
        case "todowrite", "todoread", "think": return "think"
        default: return "other"
        }
    }

    /// ACP `ToolKind` for an approval that names no part.
    static func kind(ofApproval approval: JSONObject) -> String {
        switch approval["kind"]?.string {
        case Approval.Kind.command.rawValue: return "execute"
        case Approval.Kind.fileChange.rawValue: return "edit"
        default: return approval["command"] != nil ? "execute" : "other"
        }
    }

    static func title(of data: JSONObject) -> String {
        if let title = data["title"]?.string, !title.isEmpty { return title }
        if let command = data["command"]?.string, !command.isEmpty { return command }
        if let changes = data["changes"]?.array {
            let paths = changes.compactMap { $0["path"]?.string }
            if !paths.isEmpty { return "Edit " + paths.joined(separator: ", ") }
        }
        if let tool = data["tool"]?.string, !tool.isEmpty { return tool }
        return data["kind"]?.string ?? "tool"
    }

    /// ACP `ToolCallStatus` from the normalized part status (declined tools failed, as far as
    /// the editor is concerned).
    static func status(_ status: String?) -> String? {
        switch status {
        case PartStatus.pending.rawValue: "pending"
        case PartStatus.running.rawValue: "in_progress"
        case PartStatus.completed.rawValue: "completed"
        case PartStatus.failed.rawValue, PartStatus.declined.rawValue: "failed"
        default: nil
        }
    }

    /// The content of a finished tool call: the command's or tool's output, the error, and for
    /// file changes each file's diff as text (ACP's `diff` content needs whole file texts, which
    /// the backends do not send).
    static func content(of data: JSONObject) -> [JSONValue] {
        var texts: [String] = []
        if let changes = data["changes"]?.array {
            for change in changes {
                let path = change["path"]?.string ?? "?"
                if let diff = change["diff"]?.string, !diff.isEmpty {
                    texts.append("\(path)\n```diff\n\(diff)\n```")
                } else {
                    texts.append("\(path) (\(change["kind"]?.string ?? "changed"))")
                }
            }
        }
        if let output = data["output"] {
            if let text = output.string {
                if !text.isEmpty { texts.append(text) }
            } else if !output.isNull {
                texts.append(output.serialized)
            }
        }
        if let error = data["error"]?.string, !error.isEmpty { texts.append(error) }
        return texts.map { ["type": "content", "content": ["type": "text", "text": .string($0)]] }
    }
}
