import TetherCore
import TetherStreaming

/// One part as a snapshot shows it, with what the mapper needs of it: from a JSON part (the
/// stream's `message.part.updated`, or REST's messages), or read straight from the bytes of a
/// busy stream's text frames (`OpenCodeWireEvent.Hot`), which then never become a tree.
struct OpenCodePartSnapshot: Sendable {
    enum Body: Sendable {
        /// A text or reasoning part: its text so far (the whole of it once final).
        case text(String, synthetic: Bool)
        /// Any other kind, as the wire has it.
        case json(JSONValue)
    }

    var id: String
    var session: String
    var message: String
    var kind: PartKind
    /// Whether this snapshot is the part's final form.
    var isFinal: Bool
    var body: Body

    /// nil: not a part, or a kind Tether does not show (agent, snapshot, retry, compaction).
    init?(_ part: JSONValue) {
        guard let id = part["id"]?.string, let kind = Self.kind(of: part),
              let session = part["sessionID"]?.string, let message = part["messageID"]?.string else { return nil }
        self.id = id
        self.session = session
        self.message = message
        self.kind = kind
        isFinal = Self.isFinal(part, kind: kind)
        body = kind == .text || kind == .reasoning
            ? .text(part["text"]?.string ?? "", synthetic: part["synthetic"]?.bool == true) : .json(part)
    }

    init(id: String, session: String, message: String, kind: PartKind, isFinal: Bool, body: Body) {
        self.id = id
        self.session = session
        self.message = message
        self.kind = kind
        self.isFinal = isFinal
        self.body = body
    }

    /// The text of a text or reasoning part.
    var text: String? {
        if case .text(let text, _) = body { return text }
        return nil
    }

    static func kind(of part: JSONValue) -> PartKind? {
        switch part["type"]?.string {
        case "text": return .text
        case "reasoning": return .reasoning
        case "tool": return part["tool"]?.string == "bash" ? .command : .tool
        case "step-start", "step-finish": return .step
        case "patch": return .patch
        case "file": return .file
        case "subtask": return .tool
        default: return nil  // agent, snapshot, retry, compaction: not shown
        }
    }

    /// The normalized content (the `data` of part.started / part.completed); `role`: the
    /// message's, for text. `emptyText`: a text or reasoning part's content with its text left
    /// out (`""`), as `part.started` carries it — its text follows as deltas.
    func content(role: PartRole?, emptyText: Bool = false) -> JSONObject {
        switch body {
        case .text(let text, let synthetic):
            return Self.textContent(emptyText ? "" : text, kind: kind, role: role, synthetic: synthetic)
        case .json(let part):
            return Self.content(of: part, kind: kind)
        }
    }

    /// A text or reasoning part's content with `text`.
    static func textContent(_ text: String, kind: PartKind, role: PartRole?, synthetic: Bool) -> JSONObject {
        var entries: [(key: String, value: JSONValue)] = []
        entries.reserveCapacity(4)  // room for the event's `kind` (`Event.part`)
        entries.append((key: "text", value: .string(text)))
        if kind == .text { entries.append((key: "role", value: .string((role ?? .assistant).rawValue))) }
        if synthetic { entries.append((key: "synthetic", value: true)) }
        return JSONObject(entries)
    }

    private static func content(of part: JSONValue, kind: PartKind) -> JSONObject {
        switch kind {
        case .command, .tool:
            if part["type"]?.string == "subtask" {
                return .compact(["tool": "subtask", "status": "completed", "agent": JSONValue(part["agent"]?.string),
                                 "title": JSONValue(part["description"]?.string), "prompt": JSONValue(part["prompt"]?.string)])
            }
            let state = part["state"] ?? .null
            let input = state["input"] ?? .object([:])
            var object = JSONObject.compact([
                "tool": JSONValue(part["tool"]?.string), "call_id": JSONValue(part["callID"]?.string),
                "status": .string(toolStatus(state["status"]?.string).rawValue),
                "title": JSONValue(state["title"]?.string),
            ])
            if kind == .command, let command = input["command"]?.string { object["command"] = .string(command) }
            object["input"] = input
            if let output = state["output"]?.string { object["output"] = .string(output) }
            if let error = state["error"]?.string { object["error"] = .string(error) }
            if let exit = state["metadata"]?["exit"]?.int { object["exit_code"] = .int(exit) }
            return object
        case .step:
            if part["type"]?.string == "step-finish" {
                return .compact(["phase": "finish", "reason": JSONValue(part["reason"]?.string),
                                 "cost": JSONValue(part["cost"]?.double)])
            }
            return ["phase": "start"]
        case .patch:
            return .compact(["hash": JSONValue(part["hash"]?.string), "files": part["files"] ?? .array([])])
        case .file:
            return .compact(["mime": JSONValue(part["mime"]?.string), "filename": JSONValue(part["filename"]?.string),
                             "url": JSONValue(part["url"]?.string)])
        default:
            return [:]
        }
    }

    static func toolStatus(_ status: String?) -> PartStatus {
        switch status {
        case "completed": return .completed
        case "error": return .failed
        case "running": return .running
        default: return .pending
        }
    }

    /// Whether a snapshot is the part's final form: text once `time.end` is set, a tool once it
    /// completed or failed, every other kind at once.
    static func isFinal(_ part: JSONValue, kind: PartKind) -> Bool {
        switch kind {
        case .text, .reasoning:
            return part["time"]?["end"].map { !$0.isNull } ?? false
        case .tool, .command:
            if part["type"]?.string == "subtask" { return true }
            let status = part["state"]?["status"]?.string
            return status == "completed" || status == "error"
        default:
            return true
        }
    }
}
