import TetherCore
import TetherStreaming

/// Codex app-server `ThreadItem`s (tagged by `type`, camelCase) as domain parts. Both the Codex
/// Worker and CodexMonitor carry Codex's own items, so the mapping lives here once.
public enum CodexThreadItem {
    /// The domain kind of an item type; `nil` for items Tether does not show.
    public static func kind(of item: JSONValue) -> PartKind? {
        switch item["type"]?.string {
        case "userMessage", "agentMessage": return .text
        case "reasoning": return .reasoning
        case "commandExecution": return .command
        case "fileChange": return .fileChange
        case "plan": return .plan
        case "mcpToolCall", "dynamicToolCall", "collabAgentToolCall", "webSearch", "imageView", "imageGeneration": return .tool
        case "contextCompaction", "enteredReviewMode", "exitedReviewMode": return .step
        case nil: return nil
        default: return .tool
        }
    }

    /// The item's normalized content (the `data` of part.started / part.completed, minus `kind`).
    public static func content(of item: JSONValue) -> JSONObject {
        let type = item["type"]?.string ?? ""
        switch type {
        case "userMessage":
            let text = (item["content"]?.array ?? []).compactMap { piece -> String? in
                piece["type"]?.string == "text" ? piece["text"]?.string : nil
            }.joined(separator: "\n")
            return ["role": "user", "text": .string(text)]
        case "agentMessage":
            return .compact(["role": "assistant", "text": .string(item["text"]?.string ?? ""), "phase": JSONValue(item["phase"]?.string)])
        case "reasoning":
            let summary = (item["summary"]?.array ?? []).compactMap(\.string)
            let content = (item["content"]?.array ?? []).compactMap(\.string)
            return ["text": .string((summary + content).joined(separator: "\n"))]
        case "plan":
            return ["text": .string(item["text"]?.string ?? "")]
        case "commandExecution":
            var object = JSONObject.compact([
                "command": JSONValue(item["command"]?.string), "cwd": JSONValue(item["cwd"]?.string),
                "status": .string(status(item["status"]?.string).rawValue),
                "output": JSONValue(item["aggregatedOutput"]?.string),
            ])
            if let exit = item["exitCode"]?.int { object["exit_code"] = .int(exit) }
            if let duration = item["durationMs"]?.int { object["duration_ms"] = .int(duration) }
            return object
        case "fileChange":
            let changes: [JSONValue] = (item["changes"]?.array ?? []).map(change)
            return ["changes": .array(changes), "status": .string(status(item["status"]?.string).rawValue)]
        case "mcpToolCall":
            var object = JSONObject.compact([
                "tool": JSONValue([item["server"]?.string, item["tool"]?.string].compactMap { $0 }.joined(separator: "/")),
                "status": .string(status(item["status"]?.string).rawValue),
            ])
            if let arguments = item["arguments"] { object["input"] = arguments }
            if let result = item["result"], !result.isNull { object["output"] = result }
            if let error = item["error"], !error.isNull { object["error"] = error }
            return object
        case "webSearch":
            return .compact(["tool": "web_search", "title": JSONValue(item["query"]?.string), "status": "completed"])
        default:
            return .compact(["tool": .string(type), "status": .string(status(item["status"]?.string ?? "completed").rawValue)])
        }
    }

    /// `{path, kind:{type, movePath?}, diff}` → `{path, kind, move_path?, diff}`.
    public static func change(_ change: JSONValue) -> JSONValue {
        let kind = change["kind"]?["type"]?.string ?? change["kind"]?.string
        return .object(.compact([
            "path": JSONValue(change["path"]?.string), "kind": JSONValue(kind),
            "move_path": JSONValue(change["kind"]?["movePath"]?.string), "diff": JSONValue(change["diff"]?.string),
        ]))
    }

    public static func status(_ status: String?) -> PartStatus {
        switch status {
        case "completed": return .completed
        case "failed": return .failed
        case "declined": return .declined
        case "inProgress", "in_progress", "running": return .running
        default: return .pending
        }
    }

    /// Codex turn status → outcome (`interrupted` is the user's cancel, not a failure).
    public static func outcome(ofTurnStatus status: String?) -> TurnOutcome? {
        switch status {
        case "completed": return .completed
        case "failed": return .failed
        case "interrupted": return .cancelled
        default: return nil
        }
    }

    /// A command approval's risk, from its command (file changes are medium: they edit the tree).
    public static func risk(command: String?) -> Approval.Risk {
        command.map(CommandRisk.classify) ?? .medium
    }
}
