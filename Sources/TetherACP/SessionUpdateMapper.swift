import Foundation
import TetherCore
import TetherStreaming

/// What the agent does about one normalized event: the pure output of `SessionUpdateMapper`.
public enum SessionUpdateAction: Sendable, Equatable {
    /// Send `session/update` with this `update` object.
    case update(JSONObject)
    /// Ask the editor with `session/request_permission` (the tool call it names was sent before).
    case requestPermission(PermissionAsk)
    /// An approval the editor was asked about is settled (by the editor's answer or elsewhere).
    case approvalResolved(id: String)
    /// An approval the editor cannot answer (no option ACP can express): it waits for
    /// `tether approve` or the backend's own client.
    case approvalNotAskable(id: String, reason: String)
    /// The turn ended; the prompt answers with it.
    case turnEnded(TurnOutcome, error: String?)
}

/// Maps one session's normalized events to ACP `session/update`s — a state machine in the
/// async-http-client style: events in, actions out, no I/O. One mapper follows one prompt's turn
/// (`live`) or one history replay (`replay`).
///
/// - Text and reasoning stream as `agent_message_chunk` / `agent_thought_chunk`; `part.completed`
///   adds only what the deltas did not already carry, so each message is sent once, whole.
/// - Tool, command and file-change parts become `tool_call` (id = the part id) then
///   `tool_call_update`s; an approval that names its part's item or call id reuses that id.
/// - In `live` mode the user's own text is not echoed (the editor sent it); in `replay` it is a
///   `user_message_chunk`, and approvals, usage and the turn's end are not replayed.
public struct SessionUpdateMapper: Sendable {
    public enum Mode: Sendable { case live, replay }

    public let session: String
    public let mode: Mode

    /// Per text or reasoning part: its role and the text sent so far.
    private var streamed: [String: (role: String, sent: String)] = [:]
    /// Tool call ids already announced with `tool_call`.
    private var announced: Set<String> = []
    /// Tool call ids already finished (`completed` / `failed` sent).
    private var finished: Set<String> = []
    /// A backend's call id (OpenCode `callID`) → the part id used as `toolCallId`.
    private var partForCall: [String: String] = [:]
    /// A running tool's output so far, and when (receive time) it was last shown.
    private var output: [String: (text: String, shownAt: Double)] = [:]
    /// Approvals the editor was asked about and that are not settled yet.
    private var asked: Set<String> = []
    /// Tool calls an approval announced under an id of its own (`approval-…`: no part will ever
    /// finish them), by approval id: the approval's resolution finishes them.
    private var callsOfTheirOwn: [String: String] = [:]
    private var ended = false

    /// Whether the backend answers questions (`BackendCapabilities.questions`): then a question
    /// with one set of choices is put to the editor as a permission request with those choices.
    public let answersQuestions: Bool

    public init(session: String, mode: Mode, answersQuestions: Bool = false) {
        self.session = session
        self.mode = mode
        self.answersQuestions = answersQuestions
    }

    public mutating func map(_ event: Event) -> [SessionUpdateAction] {
        // The backend may carry other sessions' traffic: only this session's (or the turn
        // stream's own, unlabelled) events count. Nothing follows the turn's end.
        if let other = event.session, other != session { return [] }
        if ended { return [] }
        switch event.type {
        case .partStarted, .partDelta, .partCompleted: return mapPart(event)
        case .planUpdated: return planUpdate(steps: event.data["steps"]?.array ?? []).map { [.update($0)] } ?? []
        case .usageUpdated: return mode == .live ? usageUpdate(event.data).map { [.update($0)] } ?? [] : []
        case .approvalRequested: return mode == .live ? approvalRequested(event.data) : []
        case .approvalResolved:
            guard mode == .live, let id = event.data["id"]?.string else { return [] }
            var actions: [SessionUpdateAction] = asked.remove(id) != nil ? [.approvalResolved(id: id)] : []
            if let call = callsOfTheirOwn.removeValue(forKey: id) {
                let refused = ["decline", "cancel", "reject", "rejected"].contains(event.data["decision"]?.string ?? "")
                actions += finish(call, status: refused ? "failed" : "completed")
            }
            return actions
        case .turnCompleted:
            guard mode == .live else { return [] }
            ended = true
            let outcome = event.data["status"]?.string.flatMap(TurnOutcome.init(rawValue:)) ?? .completed
            // A call still open when its turn ends will get no more news: it ends with the turn
            // (an editor would show it spinning for good).
            let open = announced.subtracting(finished).sorted()
            return open.flatMap { finish($0, status: outcome == .completed ? "completed" : "failed") }
                + [.turnEnded(outcome, error: event.data["error"]?.string)]
        default: return []
        }
    }

    // MARK: Parts

    private mutating func mapPart(_ event: Event) -> [SessionUpdateAction] {
        guard let part = event.part else { return [] }
        let data = event.data
        switch data["kind"]?.string.flatMap(PartKind.init(rawValue:)) {
        case .text, .reasoning: return mapText(event, part: part)
        case .tool, .command, .fileChange: return mapTool(event, part: part)
        case .plan:
            // A Codex plan item: free text, one step a line, shown as the plan when it is whole.
            guard event.type == .partCompleted, let text = data["text"]?.string else { return [] }
            let steps = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            return planUpdate(steps: steps.map { ["step": .string($0), "status": "pending"] }).map { [.update($0)] } ?? []
        default: return []
        }
    }

    private mutating func mapText(_ event: Event, part: String) -> [SessionUpdateAction] {
        let data = event.data
        let isReasoning = data["kind"]?.string == PartKind.reasoning.rawValue
        var state = streamed[part] ?? (role: data["role"]?.string ?? PartRole.assistant.rawValue, sent: "")
        if let role = data["role"]?.string { state.role = role }
        var chunk = ""
        switch event.type {
        case .partDelta:
            guard data["field"]?.string ?? "text" == "text" else { return [] }
            chunk = data["delta"]?.string ?? ""
        case .partCompleted:
            // The authoritative text: send only what the deltas did not. A final text that does
            // not extend what was streamed is not sent again (the editor has the message once).
            let final = data["text"]?.string ?? ""
            if final.hasPrefix(state.sent) { chunk = String(final.dropFirst(state.sent.count)) }
        default:
            break
        }
        state.sent += chunk
        streamed[part] = state
        guard !chunk.isEmpty else { return [] }
        let update: String
        if isReasoning {
            update = "agent_thought_chunk"
        } else if state.role == PartRole.user.rawValue {
            guard mode == .replay else { return [] }
            update = "user_message_chunk"
        } else {
            update = "agent_message_chunk"
        }
        return [.update(["sessionUpdate": .string(update), "content": ["type": "text", "text": .string(chunk)]])]
    }

    private mutating func mapTool(_ event: Event, part: String) -> [SessionUpdateAction] {
        let data = event.data
        if let call = data["call_id"]?.string { partForCall[call] = part }
        switch event.type {
        case .partStarted:
            var fields = JSONObject()
            fields["title"] = .string(ToolCallPresentation.title(of: data))
            fields["kind"] = .string(ToolCallPresentation.kind(of: data))
            fields["status"] = .string(ToolCallPresentation.status(data["status"]?.string) ?? "pending")
            if let input = data["input"], input != .object([:]) { fields["rawInput"] = input }
            return [announce(part, fields)]
        case .partCompleted:
            guard !finished.contains(part) else { return [] }
            finished.insert(part)
            output[part] = nil
            var actions: [SessionUpdateAction] = []
            if !announced.contains(part) {
                actions.append(announce(part, [
                    "title": .string(ToolCallPresentation.title(of: data)),
                    "kind": .string(ToolCallPresentation.kind(of: data)), "status": "in_progress",
                ]))
            }
            var update: JSONObject = ["sessionUpdate": "tool_call_update", "toolCallId": .string(part)]
            update["status"] = .string(ToolCallPresentation.status(data["status"]?.string) ?? "completed")
            update["title"] = .string(ToolCallPresentation.title(of: data))
            let content = ToolCallPresentation.content(of: data)
            if !content.isEmpty { update["content"] = .array(content) }
            actions.append(.update(update))
            return actions
        case .partDelta:
            return outputDelta(event, part: part)
        default:
            return []
        }
    }

    /// A running command's output, shown as it comes: at most one update per
    /// `outputInterval` of receive time (a chatty command must not flood the editor), each
    /// carrying the output so far (ACP content replaces, it does not append), its last
    /// `outputTail` characters. The finished call carries the whole output.
    private mutating func outputDelta(_ event: Event, part: String) -> [SessionUpdateAction] {
        guard mode == .live, event.data["field"]?.string == "output", let delta = event.data["delta"]?.string,
              !finished.contains(part) else { return [] }
        var state = output[part] ?? (text: "", shownAt: -Double.infinity)
        state.text += delta
        // Only the tail is ever shown: keep memory bounded however long the command talks.
        if state.text.utf8.count > 4 * Self.outputTail { state.text = String(state.text.suffix(Self.outputTail)) }
        defer { output[part] = state }
        guard event.ts - state.shownAt >= Self.outputInterval else { return [] }
        state.shownAt = event.ts
        var actions: [SessionUpdateAction] = []
        if !announced.contains(part) {
            actions.append(announce(part, ["title": .string(ToolCallPresentation.title(of: event.data)),
                                           "kind": .string(ToolCallPresentation.kind(of: event.data)), "status": "in_progress"]))
        }
        let shown = String(state.text.suffix(Self.outputTail))
        actions.append(.update(["sessionUpdate": "tool_call_update", "toolCallId": .string(part),
                                "content": [["type": "content", "content": ["type": "text", "text": .string(shown)]]]]))
        return actions
    }

    static let outputInterval: Double = 250   // milliseconds, as `Event.ts`
    static let outputTail = 16_384

    /// A `tool_call_update` that finishes `call` with `status` (once).
    private mutating func finish(_ call: String, status: String) -> [SessionUpdateAction] {
        guard announced.contains(call), finished.insert(call).inserted else { return [] }
        output[call] = nil
        return [.update(["sessionUpdate": "tool_call_update", "toolCallId": .string(call), "status": .string(status)])]
    }

    /// `tool_call` the first time an id is seen, `tool_call_update` after (an approval may have
    /// announced the call before its part started).
    private mutating func announce(_ id: String, _ fields: JSONObject) -> SessionUpdateAction {
        var update: JSONObject = ["toolCallId": .string(id)]
        if announced.contains(id) {
            update["sessionUpdate"] = "tool_call_update"
            for (key, value) in fields where key != "title" || value.string != nil { update[key] = value }
        } else {
            announced.insert(id)
            update = ["sessionUpdate": "tool_call", "toolCallId": .string(id)]
            for (key, value) in fields { update[key] = value }
        }
        return .update(update)
    }

    // MARK: Approvals

    private mutating func approvalRequested(_ data: JSONObject) -> [SessionUpdateAction] {
        guard let id = data["id"]?.string, !asked.contains(id) else { return [] }
        var actions: [SessionUpdateAction] = []
        let toolCallID = toolCallID(for: data, approval: id)
        let title = data["title"]?.string ?? data["command"]?.string ?? "Permission needed"
        let kind = ToolCallPresentation.kind(ofApproval: data)
        if !announced.contains(toolCallID) {
            var fields: JSONObject = ["title": .string(title), "kind": .string(kind), "status": "pending"]
            if let command = data["command"]?.string { fields["rawInput"] = ["command": .string(command)] }
            actions.append(announce(toolCallID, fields))
        }
        if toolCallID == Self.ownCallID(approval: id) { callsOfTheirOwn[id] = toolCallID }
        var decisions = (data["options"]?.array ?? []).compactMap { $0.string.flatMap(Decision.init(rawValue:)) }
        var options = PermissionAsk.options(for: decisions)
        if data["kind"]?.string == Approval.Kind.question.rawValue {
            let choices = answersQuestions ? PermissionAsk.options(forQuestions: ApprovalQuestion.list(data["questions"])) : nil
            options = choices ?? []
            decisions = choices == nil ? [] : [.accept, .decline]
        }
        guard !options.isEmpty else {
            actions.append(.approvalNotAskable(id: id, reason: "its kind (\(data["kind"]?.string ?? "unknown")) offers no decision ACP can express"))
            return actions
        }
        asked.insert(id)
        var toolCall: JSONObject = ["toolCallId": .string(toolCallID), "title": .string(title), "kind": .string(kind),
                                    "status": "pending"]
        if let command = data["command"]?.string { toolCall["rawInput"] = ["command": .string(command)] }
        if let reason = data["reason"]?.string, !reason.isEmpty {
            toolCall["content"] = [["type": "content", "content": ["type": "text", "text": .string(reason)]]]
        }
        actions.append(.requestPermission(PermissionAsk(approvalID: id, session: session, toolCall: toolCall,
                                                        options: options, accepted: decisions)))
        return actions
    }

    /// The tool call an approval belongs to: the Codex item it names, the OpenCode call it names
    /// (through the part that carried that call id), else one of its own.
    private func toolCallID(for data: JSONObject, approval: String) -> String {
        if let item = data["item"]?.string, !item.isEmpty { return item }
        if let call = data["tool"]?["callID"]?.string ?? data["call_id"]?.string {
            return partForCall[call] ?? call
        }
        return Self.ownCallID(approval: approval)
    }

    static func ownCallID(approval: String) -> String { "approval-" + approval }

    // MARK: Plan and usage

    private func planUpdate(steps: [JSONValue]) -> JSONObject? {
        let entries: [JSONValue] = steps.compactMap { step in
            guard let content = step["step"]?.string ?? step["content"]?.string else { return nil }
            let status: String = switch step["status"]?.string {
            case "in_progress", "inProgress": "in_progress"
            case "completed", "cancelled": "completed"
            default: "pending"
            }
            let priority = step["priority"]?.string.flatMap { ["high", "medium", "low"].contains($0) ? $0 : nil } ?? "medium"
            return ["content": .string(content), "priority": .string(priority), "status": .string(status)]
        }
        return ["sessionUpdate": "plan", "entries": .array(entries)]
    }

    /// `usage_update` needs the context window (`size`); `used` is the tokens the last exchange
    /// put in it.
    private func usageUpdate(_ data: JSONObject) -> JSONObject? {
        guard let size = data["context_window"]?.int else { return nil }
        let used = (data["input_tokens"]?.int ?? 0) + (data["output_tokens"]?.int ?? 0)
        var update: JSONObject = ["sessionUpdate": "usage_update", "used": .int(used), "size": .int(size)]
        if let cost = data["cost"]?.double { update["cost"] = ["amount": .double(cost), "currency": "USD"] }
        return update
    }
}
