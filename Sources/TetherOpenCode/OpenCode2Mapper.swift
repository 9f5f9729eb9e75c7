import TetherCore
import TetherStreaming

/// OpenCode 2.x events and the message union → normalized events (adapters.md, "OpenCode 2").
/// Pure: no I/O. `map` takes one decoded frame of the global stream or the durable log;
/// `replay` a session's history (oldest first); `reconcile` pending permissions and forms read
/// over REST after a reconnect.
///
/// Turns: a turn is one execution (`session.execution.started` … `.succeeded | .failed |
/// .interrupted`); its id is the id of the input it answers (`session.input.promoted {inputID}`,
/// the `id` `POST …/prompt` returned, which becomes the user message's id in history), so
/// `send --follow` knows its turn from the POST's answer. Parts: text and reasoning have no ids
/// on the wire; they are `MESSAGE#ORDINAL` (`OpenCode2Facts.partID`); tools are their call id.
/// Durable frames are taken once each: a `seq` at or below the session's last is dropped (the
/// global stream and the log may both carry it), and it is the events' `cursor`.
struct OpenCode2Mapper {
    struct PartState {
        var session: String
        var turn: String?
        var kind: PartKind
        var text = ""
        /// A delta did not fit the bound: later ones are not kept either, so `text` stays a
        /// prefix of what was sent, never one with a hole.
        var truncated = false
        var content: JSONObject = [:]
    }

    struct TurnState {
        var id: String
        var outcome: TurnOutcome = .completed
        var error: String?
        var usage: Usage?
    }

    // Per session, part and turn state is bounded (`RecentMap`: the oldest is let go of), so a
    // stream of sessions never seen again, or of parts that never end, does not grow.
    private(set) var lastSeq = RecentMap<String, Int>(capacity: 4096)
    private(set) var openTurns = RecentMap<String, TurnState>(capacity: 1024)
    /// Inputs promoted (their execution not started yet), oldest first, with their text.
    private var promoted: [String: [(id: String, text: String?)]] = [:]
    private var admittedText = RecentMap<String, String>(capacity: 1024)
    private var parts = RecentMap<String, PartState>(capacity: 1024)
    /// Text kept per open part from its deltas (what completes it when its `*.ended` never
    /// comes); the deltas themselves always go out.
    static let partTextLimit = 1 << 20
    private var completedParts = RecentSet(capacity: 4096)
    private var completedTurns = RecentSet(capacity: 1024)
    private(set) var pendingApprovals: [String: Approval] = [:]
    private(set) var statuses = RecentMap<String, SessionStatus>(capacity: 4096)

    init() {}

    /// Sessions whose turn is open: those a reconnect resumes from their logs.
    var activeSessions: Set<String> { Set(openTurns.keys) }

    /// Starts `session`'s durable position at `seq` (`--since`): frames at or below it are dropped.
    mutating func resume(session: String, after seq: Int) {
        lastSeq[session] = max(lastSeq[session] ?? 0, seq)
    }

    // MARK: Frames

    mutating func map(_ wire: OpenCode2WireEvent) -> [Event] {
        guard !wire.isSyncedMarker, let session = wire.session else { return [] }
        if let seq = wire.seq {
            if seq <= lastSeq[session] ?? 0 { return [] }
            lastSeq[session] = seq
        }
        var events = map(type: wire.type, data: wire.data, session: session)
        if let seq = wire.seq {
            for index in events.indices { events[index].cursor = String(seq) }
        }
        if let raw = wire.raw {
            for index in events.indices { events[index].raw = raw }
        }
        return events
    }

    /// A delta read straight from its frame (`OpenCode2HotFrame`), mapped as `map` maps the same
    /// frame decoded whole.
    mutating func map(_ delta: OpenCode2TextDelta) -> [Event] {
        partDelta(delta.delta, to: OpenCode2Facts.partID(message: delta.message, ordinal: delta.ordinal), session: delta.session,
                  kind: delta.kind)
    }

    private mutating func partDelta(_ delta: String, to id: String, session: String, kind: PartKind) -> [Event] {
        guard !completedParts.contains(id) else { return [] }
        var events = parts[id] == nil ? startPart(id, session: session, kind: kind) : []
        // In place (`update`): through the subscript, each delta would copy the text so far.
        let turn = parts.update(id) { part -> String? in
            if !part.truncated {
                if part.text.utf8.count + delta.utf8.count <= Self.partTextLimit {
                    part.text += delta
                } else {
                    part.truncated = true
                }
            }
            return part.turn
        } ?? nil
        events.append(.partDelta(session: session, turn: turn, part: id, kind: kind, delta: delta))
        return events
    }

    private mutating func map(type: String, data d: JSONValue, session: String) -> [Event] {
        let message = d["assistantMessageID"]?.string ?? ""
        switch type {
        case "session.created":
            return (d["info"]).flatMap(Self.session(from:)).map { [.session(.sessionCreated, $0)] } ?? []
        case "session.deleted":
            return [Event(.sessionDeleted, session: session)]
        case "session.renamed":
            return [Event(.sessionUpdated, session: session, data: .compact(["id": .string(session), "title": JSONValue(d["title"]?.string)]))]
        case "session.input.admitted":
            if let id = d["inputID"]?.string, let text = d["input"]?["text"]?.string { _ = admittedText.set(text, forKey: id) }
            return []
        case "session.input.promoted":
            guard let id = d["inputID"]?.string, !completedTurns.contains(id), openTurns[session]?.id != id,
                  !(promoted[session] ?? []).contains(where: { $0.id == id }) else { return [] }
            promoted[session, default: []].append((id, admittedText[id]))
            return []
        case "session.execution.started":
            return startTurn(session: session, fallbackID: nil)
        case "session.execution.succeeded":
            return endTurn(session: session, outcome: .completed, error: nil)
        case "session.execution.failed":
            return endTurn(session: session, outcome: .failed, error: Self.errorText(d["error"]))
        case "session.execution.interrupted":
            return endTurn(session: session, outcome: .cancelled, error: d["reason"]?.string.map { "interrupted (\($0))" })
        case "session.status":
            switch d["status"]?["type"]?.string {
            case "idle": return setStatus(session, .idle)
            case "retry": return setStatus(session, .retrying)
            default: return setStatus(session, .busy)
            }
        case "session.retry.scheduled":
            return setStatus(session, .retrying)
        case "session.step.failed":
            let text = Self.errorText(d["error"])
            openTurns[session]?.outcome = .failed
            openTurns[session]?.error = text
            return [.error(TetherError(.failed, text), session: session, turn: openTurns[session]?.id)]
        case "session.step.ended", "session.usage.updated":
            guard let usage = Self.usage(d) else { return [] }
            openTurns[session]?.usage = usage
            return [.usageUpdated(session: session, turn: openTurns[session]?.id, usage: usage)]
        case "session.text.started", "session.reasoning.started":
            guard let ordinal = d["ordinal"]?.int else { return [] }
            return startPart(OpenCode2Facts.partID(message: message, ordinal: Int(ordinal)), session: session,
                             kind: type == "session.text.started" ? .text : .reasoning)
        case "session.text.delta", "session.reasoning.delta":
            guard let ordinal = d["ordinal"]?.int, let delta = d["delta"]?.string else { return [] }
            return partDelta(delta, to: OpenCode2Facts.partID(message: message, ordinal: Int(ordinal)), session: session,
                             kind: type == "session.text.delta" ? .text : .reasoning)
        case "session.text.ended", "session.reasoning.ended":
            guard let ordinal = d["ordinal"]?.int else { return [] }
            let id = OpenCode2Facts.partID(message: message, ordinal: Int(ordinal))
            let kind: PartKind = type == "session.text.ended" ? .text : .reasoning
            var events = parts[id] == nil ? startPart(id, session: session, kind: kind) : []
            let text = d["text"]?.string ?? parts[id]?.text ?? ""
            events += completePart(id, content: Self.textContent(text, kind: kind))
            return events
        case "session.tool.input.started", "session.tool.called":
            guard let call = d["id"]?.string ?? d["callID"]?.string else { return [] }
            let name = d["name"]?.string ?? parts[call]?.content["tool"]?.string ?? "tool"
            let events = parts[call] == nil ? startTool(call, name: name, session: session, input: d["input"]) : []
            if let input = d["input"], type == "session.tool.called" {
                parts[call]?.content["input"] = input
                parts[call]?.content["status"] = .string(PartStatus.running.rawValue)
                if let command = input["command"]?.string, parts[call]?.kind == .command { parts[call]?.content["command"] = .string(command) }
            }
            return events
        case "session.tool.success":
            guard let call = d["id"]?.string ?? d["callID"]?.string else { return [] }
            var events = parts[call] == nil ? startTool(call, name: "tool", session: session, input: nil) : []
            var content = parts[call]?.content ?? [:]
            content["status"] = .string(PartStatus.completed.rawValue)
            content["output"] = .string(Self.text(of: d["content"]))
            events += completePart(call, content: content)
            return events
        case "session.tool.failed":
            guard let call = d["id"]?.string ?? d["callID"]?.string else { return [] }
            var events = parts[call] == nil ? startTool(call, name: "tool", session: session, input: nil) : []
            var content = parts[call]?.content ?? [:]
            content["status"] = .string(PartStatus.failed.rawValue)
            content["error"] = .string(Self.errorText(d["error"]))
            events += completePart(call, content: content)
            return events
        case "permission.asked":
            guard let approval = Self.approval(fromPermission: d, turn: openTurns[session]?.id) else { return [] }
            return request(approval)
        case "permission.replied":
            guard let request = d["requestID"]?.string else { return [] }
            // The reply's field name at GA is not established (§7): `reply`, else `decision`.
            let reply = d["reply"]?.string ?? d["decision"]?.string ?? ""
            return resolve(request, session: session, decision: OpenCodeDecision.decision(forReply: reply))
        case "form.created":
            guard let approval = Self.approval(fromForm: d["form"] ?? d, turn: openTurns[session]?.id) else { return [] }
            return request(approval)
        case "form.replied", "form.cancelled":
            guard let form = d["id"]?.string ?? d["formID"]?.string else { return [] }
            return resolve(form, session: session, decision: type == "form.replied" ? "answered" : "rejected")
        default:
            return []
        }
    }

    // MARK: Turns

    private mutating func startTurn(session: String, fallbackID: String?) -> [Event] {
        guard openTurns[session] == nil else { return [] }
        var queue = promoted[session] ?? []
        let input = queue.isEmpty ? nil : queue.removeFirst()
        promoted[session] = queue.isEmpty ? nil : queue
        // An execution whose input we never saw (joined mid-turn): a turn of its own.
        let id = input?.id ?? fallbackID ?? "\(session)#\(lastSeq[session] ?? 0)"
        guard !completedTurns.contains(id) else { return [] }
        openTurns[session] = TurnState(id: id)
        var events: [Event] = [.turnStarted(session: session, turn: id)]
        events += setStatus(session, .busy)
        if let text = input?.text {
            let part = OpenCode2Facts.partID(message: id, ordinal: 0)
            events.append(.part(.partStarted, session: session, turn: id, part: part, kind: .text, content: ["text": "", "role": "user"]))
            events.append(.part(.partCompleted, session: session, turn: id, part: part, kind: .text, content: ["text": .string(text), "role": "user"]))
            completedParts.insert(part)
        }
        return events
    }

    private mutating func endTurn(session: String, outcome: TurnOutcome, error: String?) -> [Event] {
        guard var turn = openTurns.removeValue(forKey: session) else { return setStatus(session, .idle) }
        var events: [Event] = []
        for (id, part) in parts.filter({ $0.value.session == session }).sorted(by: { $0.key < $1.key }) {
            // (A text part whose `*.ended` never came completes with the text its deltas brought.)
            var content = part.content
            if part.kind == .text || part.kind == .reasoning {
                content = Self.textContent(part.text, kind: part.kind)
            } else if content["status"]?.string != PartStatus.completed.rawValue {
                content["status"] = .string(PartStatus.failed.rawValue)
            }
            events += completePart(id, content: content)
        }
        if turn.outcome == .completed || outcome != .completed { turn.outcome = outcome }
        if turn.error == nil { turn.error = error }
        for (id, approval) in pendingApprovals where approval.session == session { pendingApprovals[id] = nil }
        if !completedTurns.contains(turn.id) {
            completedTurns.insert(turn.id)
            events.append(.turnCompleted(session: session, turn: turn.id, outcome: turn.outcome,
                                         error: turn.outcome == .completed ? nil : turn.error, usage: turn.usage))
        }
        return events + setStatus(session, .idle)
    }

    private mutating func setStatus(_ session: String, _ status: SessionStatus) -> [Event] {
        guard statuses[session] != status else { return [] }
        statuses[session] = status
        return [.sessionStatus(session, status)]
    }

    // MARK: Parts

    private mutating func startPart(_ id: String, session: String, kind: PartKind) -> [Event] {
        guard parts[id] == nil, !completedParts.contains(id) else { return [] }
        let turn = openTurns[session]?.id
        parts[id] = PartState(session: session, turn: turn, kind: kind)
        return [.part(.partStarted, session: session, turn: turn, part: id, kind: kind, content: Self.textContent("", kind: kind))]
    }

    private mutating func startTool(_ call: String, name: String, session: String, input: JSONValue?) -> [Event] {
        guard !completedParts.contains(call) else { return [] }
        let kind = OpenCode2Facts.partKind(ofTool: name)
        var content: JSONObject = ["tool": .string(name), "call_id": .string(call), "status": .string(PartStatus.pending.rawValue)]
        if let input { content["input"] = input }
        if kind == .command, let command = input?["command"]?.string { content["command"] = .string(command) }
        let turn = openTurns[session]?.id
        parts[call] = PartState(session: session, turn: turn, kind: kind, content: content)
        return [.part(.partStarted, session: session, turn: turn, part: call, kind: kind, content: content)]
    }

    private mutating func completePart(_ id: String, content: JSONObject) -> [Event] {
        guard !completedParts.contains(id), let part = parts.removeValue(forKey: id) else { return [] }
        completedParts.insert(id)
        return [.part(.partCompleted, session: part.session, turn: part.turn, part: id, kind: part.kind, content: content)]
    }

    static func textContent(_ text: String, kind: PartKind) -> JSONObject {
        kind == .text ? ["text": .string(text), "role": "assistant"] : ["text": .string(text)]
    }

    // MARK: Approvals

    private mutating func request(_ approval: Approval) -> [Event] {
        let request = CompositeID.split(approval.id, count: 2)?.last ?? approval.id
        guard pendingApprovals[request] == nil else { return [] }
        pendingApprovals[request] = approval
        var events = [Event.approvalRequested(approval)]
        if let session = approval.session { events += setStatus(session, .waitingApproval) }
        return events
    }

    private mutating func resolve(_ request: String, session: String, decision: String) -> [Event] {
        let approval = pendingApprovals.removeValue(forKey: request)
        var events: [Event] = [.approvalResolved(id: approval?.id ?? CompositeID.join([session, request]), session: session,
                                                 turn: approval?.turn ?? openTurns[session]?.id, decision: decision)]
        if statuses[session] == .waitingApproval, !pendingApprovals.values.contains(where: { $0.session == session }) {
            events += setStatus(session, openTurns[session] == nil ? .idle : .busy)
        }
        return events
    }

    /// What the stream missed while it was down: requests listed now and not known are asked;
    /// known ones of `sessions` no longer listed were settled meanwhile.
    mutating func reconcile(pending list: [JSONValue], sessions: Set<String>) -> [Event] {
        var events: [Event] = []
        var listed = Set<String>()
        for item in list {
            let approval = item["fields"] != nil || item["mode"] != nil
                ? Self.approval(fromForm: item, turn: item["sessionID"]?.string.flatMap { openTurns[$0]?.id })
                : Self.approval(fromPermission: item, turn: item["sessionID"]?.string.flatMap { openTurns[$0]?.id })
            guard let approval else { continue }
            listed.insert(CompositeID.split(approval.id, count: 2)?.last ?? approval.id)
            events += request(approval)
        }
        for (request, approval) in pendingApprovals where !listed.contains(request) && approval.session.map(sessions.contains) == true {
            events += resolve(request, session: approval.session!, decision: "unknown")
        }
        return events
    }

    /// A `Permission.Request` (`{id, sessionID, action, resources, save, metadata, message, source}`).
    static func approval(fromPermission p: JSONValue, turn: String?) -> Approval? {
        guard let request = p["id"]?.string, let session = p["sessionID"]?.string else { return nil }
        let action = p["action"]?.string ?? "permission"
        let resources = p["resources"]?.array?.compactMap(\.string) ?? []
        let command = p["metadata"]?["command"]?.string ?? (OpenCode2Facts.partKind(ofTool: action) == .command ? resources.first : nil)
        let risk: Approval.Risk = command.map(CommandRisk.classify) ?? (["edit", "write", "patch"].contains(action) ? .medium : .low)
        var extra: JSONObject = ["permission": .string(action)]
        if let save = p["save"]?.array, !save.isEmpty { extra["always"] = .array(save) }
        if let source = p["source"], !source.isNull { extra["tool"] = source }
        return Approval(id: CompositeID.join([session, request]), session: session, turn: turn, kind: .permission,
                        title: p["message"]?.string ?? "\(action): \(resources.joined(separator: " "))",
                        command: command, patterns: resources, options: OpenCodeDecision.supported, risk: risk, extra: extra)
    }

    /// A `Form.Info` as a question: each field a question (`header` its key, so `--answer KEY=VALUE`
    /// names it), its options the choices. A `url` form carries its `url`.
    static func approval(fromForm f: JSONValue, turn: String?) -> Approval? {
        guard let form = f["id"]?.string, let session = f["sessionID"]?.string else { return nil }
        let fields = f["fields"]?.array ?? []
        let questions: [JSONValue] = fields.map { field in
            let options: [JSONValue] = (field["options"]?.array ?? []).map { option in
                .object(.compact(["label": JSONValue(option["label"]?.string ?? option["value"]?.string),
                                  "description": JSONValue(option["description"]?.string)]))
            }
            return .object(.compact([
                "question": JSONValue(field["title"]?.string ?? field["key"]?.string), "header": JSONValue(field["key"]?.string),
                "options": .array(options), "multiple": .bool(field["type"]?.string == "multiselect"),
                "custom": .bool(field["custom"]?.bool ?? options.isEmpty),
            ]))
        }
        let title = f["title"]?.string ?? questions.compactMap { $0["question"]?.string }.joined(separator: " / ")
        var extra: JSONObject = ["questions": .array(questions), "form": .string(form)]
        if let url = f["url"]?.string { extra["url"] = .string(url) }
        return Approval(id: CompositeID.join([session, form]), session: session, turn: turn, kind: .question,
                        title: title.isEmpty ? "question" : title, options: [.accept, .decline], risk: .low, extra: extra)
    }

    /// `answers` (one list per field, in order; labels or text) as a form reply's `answer`.
    static func formAnswer(fields: [JSONValue], answers: [[String]]) -> JSONObject {
        var answer: JSONObject = [:]
        for (field, chosen) in zip(fields, answers) {
            guard let key = field["key"]?.string else { continue }
            let options = field["options"]?.array ?? []
            let values = chosen.map { label in
                options.first { ($0["label"]?.string ?? $0["value"]?.string)?.lowercased() == label.lowercased() }?["value"]?.string ?? label
            }
            answer[key] = field["type"]?.string == "multiselect" ? .array(values.map(JSONValue.string)) : .string(values.first ?? "")
        }
        return answer
    }

    // MARK: History

    /// A session's history (the message union, oldest first) as the events a live stream would
    /// have given. `busy`: the last turn is still running (left open).
    mutating func replay(session: String, messages: [JSONValue], busy: Bool) -> [Event] {
        var events: [Event] = []
        for message in messages {
            let id = message["id"]?.string ?? ""
            switch message["type"]?.string {
            case "user":
                if openTurns[session] != nil { events += endTurn(session: session, outcome: .completed, error: nil) }
                promoted[session] = [(id, message["text"]?.string)]
                events += startTurn(session: session, fallbackID: id)
            case "assistant":
                if openTurns[session] == nil { events += startTurn(session: session, fallbackID: id) }
                for (ordinal, item) in (message["content"]?.array ?? []).enumerated() {
                    events += replay(item: item, message: id, ordinal: ordinal, session: session)
                }
                if let error = message["error"], !error.isNull {
                    openTurns[session]?.outcome = .failed
                    openTurns[session]?.error = Self.errorText(error)
                }
                if let usage = Self.usage(message) { openTurns[session]?.usage = usage }
            case "idle":
                events += endTurn(session: session, outcome: OpenCode2Facts.outcome(ofIdle: message["outcome"]?.string), error: nil)
            default:
                continue
            }
        }
        if !busy, openTurns[session] != nil { events += endTurn(session: session, outcome: .completed, error: nil) }
        return events
    }

    private mutating func replay(item: JSONValue, message: String, ordinal: Int, session: String) -> [Event] {
        switch item["type"]?.string {
        case "text", "reasoning":
            let kind: PartKind = item["type"]?.string == "text" ? .text : .reasoning
            let id = OpenCode2Facts.partID(message: message, ordinal: ordinal)
            return startPart(id, session: session, kind: kind) + completePart(id, content: Self.textContent(item["text"]?.string ?? "", kind: kind))
        case "tool":
            guard let call = item["id"]?.string else { return [] }
            let state = item["state"] ?? .null
            let input = state["input"]?.object != nil ? state["input"] : nil
            var events = startTool(call, name: item["name"]?.string ?? "tool", session: session, input: input)
            switch state["status"]?.string {
            case "completed":
                var content = parts[call]?.content ?? [:]
                content["status"] = .string(PartStatus.completed.rawValue)
                content["output"] = .string(Self.text(of: state["content"]))
                events += completePart(call, content: content)
            case "error":
                var content = parts[call]?.content ?? [:]
                content["status"] = .string(PartStatus.failed.rawValue)
                content["error"] = .string(Self.errorText(state["error"]))
                events += completePart(call, content: content)
            default:
                break
            }
            return events
        default:
            return []
        }
    }

    // MARK: Shapes

    /// `Session.Info` → `Session` (`location.directory`, epoch-millisecond times).
    static func session(from info: JSONValue) -> Session? {
        guard let id = info["id"]?.string else { return nil }
        return Session(id: id, title: info["title"]?.string, directory: info["location"]?["directory"]?.string,
                       createdAt: info["time"]?["created"]?.double, updatedAt: info["time"]?["updated"]?.double)
    }

    static func usage(_ d: JSONValue) -> Usage? {
        guard let tokens = d["tokens"], tokens["input"] != nil else { return nil }
        return Usage(inputTokens: tokens["input"]?.int.map(Int.init), outputTokens: tokens["output"]?.int.map(Int.init),
                     reasoningTokens: tokens["reasoning"]?.int.map(Int.init), cacheReadTokens: tokens["cache"]?["read"]?.int.map(Int.init),
                     cacheWriteTokens: tokens["cache"]?["write"]?.int.map(Int.init), cost: d["cost"]?.double)
    }

    /// `{type, message}` (or a bare string) as one line.
    static func errorText(_ error: JSONValue?) -> String {
        guard let error, !error.isNull else { return "unknown error" }
        if let text = error.string { return text }
        let type = error["type"]?.string ?? error["_tag"]?.string
        let message = error["message"]?.string
        switch (type, message) {
        case let (type?, message?): return "\(type): \(message)"
        case let (nil, message?): return message
        case let (type?, nil): return type
        default: return "unknown error"
        }
    }

    /// A tool's `content: [{type: "text", text}, …]` as its output text.
    static func text(of content: JSONValue?) -> String {
        (content?.array ?? []).compactMap { $0["text"]?.string }.joined()
    }
}
