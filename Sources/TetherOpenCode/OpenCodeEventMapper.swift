import TetherCore
import TetherStreaming

/// OpenCode wire events → normalized events. A pure state machine: `map` takes one decoded wire
/// event and returns the domain events it means; `reconcile` takes REST snapshots after a
/// reconnect and returns only what the stream missed. No I/O here (see `OpenCodeBackend`).
///
/// Turns: a user message starts one (its id is the turn id); the turn ends when the session goes
/// idle, not when an assistant message completes (a tool turn has several). Parts: snapshots
/// replace, deltas append; `part.completed` carries the final content and is emitted once.
struct OpenCodeEventMapper {
    struct PartState {
        var id: String
        var session: String
        var message: String
        var kind: PartKind
        /// Text assembled from deltas, within the limits: what was sent, or once a piece was
        /// refused (`truncated`), the part of it before that piece.
        var text = ""
        /// UTF-8 bytes of text sent as deltas: where a snapshot that moved on takes up.
        var sentBytes = 0
        /// A piece did not fit: later ones are not assembled either, so `text` stays a prefix
        /// of what was sent (never one with a hole in it).
        var truncated = false
        var snapshot = LastSnapshot.content([:])
        var started = false
    }

    /// What a part's last snapshot said, for completing it without one (`completePart`).
    enum LastSnapshot {
        /// A text or reasoning part's content is its text, which completing takes from what was
        /// assembled, and these: kept as they are, not as the object `content(role:)` builds
        /// (an allocation a frame on a stream of new parts, and its release when one is let go of).
        case text(role: PartRole?, synthetic: Bool)
        /// Any other kind's content, as it was.
        case content(JSONObject)
    }

    struct MessageState {
        var role: PartRole
        var session: String
        var turn: String?
        var usage: Usage?
    }

    struct TurnState {
        var id: String
        var session: String
        var outcome: TurnOutcome = .completed
        var error: String?
        var usage: Usage?
    }

    /// A prompt OpenCode took while a turn was running: it stores the user message at once and
    /// answers it once the running turn is done, with no idle between (`SessionPrompt.prompt`
    /// writes the message, then joins the running loop, which goes on with the newest user
    /// message). Its turn starts when an assistant message answers it (`parentID`), or at idle;
    /// until then the events of its own message wait here, so no part comes before its turn.
    struct QueuedPrompt {
        var id: String
        var started: JSONObject
        var held: [Event] = []
    }

    /// Context windows by `provider/model`, from `GET /config/providers`.
    var contextWindows: [String: Int] = [:]

    // Everything kept per part, message, turn and session is bounded (`RecentMap`), whatever
    // the stream's shape: a stream of parts that never complete, or of sessions never seen
    // again, lets go of the oldest instead of growing. What the bounds let go of is counted
    // (`releasedState`) so the stream can say so once.
    private(set) var parts = RecentMap<HashedKey, PartState>(capacity: Self.openPartLimit)
    private var messages = RecentMap<String, MessageState>(capacity: 4096)
    private(set) var openTurns = RecentMap<String, TurnState>(capacity: 1024)
    /// By session, oldest first (a few at most: each is a prompt someone sent during a turn).
    private(set) var queuedPrompts = RecentMap<String, [QueuedPrompt]>(capacity: 1024)
    private var completedParts = RecentSet(capacity: 4096, of: HashedKey.self)
    private var completedTurns = RecentSet(capacity: 1024)
    private(set) var pendingApprovals: [String: Approval] = [:]
    private(set) var statuses = RecentMap<String, SessionStatus>(capacity: 4096)
    /// Resyncs in a row that found a session idle with its last user message not yet answered.
    private var idleUnanswered = RecentMap<String, Int>(capacity: 1024)
    /// How many such resyncs it takes to believe the turn ended without a reply.
    static let unansweredIdleLimit = 3

    /// Parts open at once (started, not completed) before the oldest is let go of.
    static let openPartLimit = 1024
    /// Text assembled from deltas, for parts whose final snapshot never comes: at most this much
    /// a part, and this much over all open parts (the final snapshot is authoritative).
    static let partTextLimit = 1 << 20
    static let assembledTextBudget = 16 << 20
    private var assembledBytes = 0
    /// Deltas not assembled because a limit was reached (the deltas themselves still go out).
    private(set) var textNotAssembled = 0

    /// Open state let go of because a bound was reached: parts, messages, turns, sessions.
    var releasedState: Int {
        parts.evicted + messages.evicted + openTurns.evicted + statuses.evicted + idleUnanswered.evicted + queuedPrompts.evicted
    }

    init() {}

    // MARK: - Stream events

    mutating func map(_ wire: OpenCodeWireEvent) -> [Event] {
        var events: [Event] = []
        map(wire, into: &events)
        return events
    }

    /// `map`, its events appended to `events` (a stream's loop gathers a batch's events in one
    /// array: a busy stream's part frames then make no array of their own).
    mutating func map(_ wire: OpenCodeWireEvent, into events: inout [Event]) {
        let start = events.count
        switch wire.body {
        case .partDelta(let delta):
            mapDelta(delta, into: &events)
        case .partUpdated(let snapshot, let delta):
            mapPart(snapshot, delta: delta, into: &events)
        case .properties(let properties):
            events += map(type: wire.type, properties: properties)
        }
        if let raw = wire.raw {
            for index in start..<events.count { events[index].raw = raw }
        }
    }

    private mutating func map(type: String, properties p: JSONValue) -> [Event] {
        var events: [Event]
        switch type {
        case "session.created", "session.updated", "session.deleted":
            guard let info = p["info"], let session = Self.session(from: info) else { return [] }
            let kind: EventType = type == "session.created" ? .sessionCreated
                : type == "session.updated" ? .sessionUpdated : .sessionDeleted
            events = [.session(kind, session)]
        case "session.status":
            guard let session = p["sessionID"]?.string, let status = p["status"] else { return [] }
            events = mapStatus(session: session, status: status)
        case "session.idle":
            guard let session = p["sessionID"]?.string else { return [] }
            events = goIdle(session: session)
        case "session.error":
            events = mapSessionError(p)
        case "message.updated":
            guard let info = p["info"] else { return [] }
            events = mapMessage(info)
        case "message.removed":
            events = []
        case "message.part.updated":
            guard let part = p["part"] else { return [] }
            events = mapPart(part, delta: p["delta"]?.string)
        case "message.part.delta":
            guard let delta = OpenCodePartDelta(p) else { return [] }
            events = []
            mapDelta(delta, into: &events)
        case "message.part.removed":
            guard let partID = p["partID"]?.string else { return [] }
            let state = releasePart(HashedKey(partID))
            events = [.partRemoved(session: p["sessionID"]?.string ?? state?.session,
                                   turn: state.flatMap { messages[$0.message]?.turn }, part: partID)]
        case "permission.asked", "permission.updated":
            events = mapPermissionAsked(p, legacy: type == "permission.updated")
        case "permission.replied":
            events = mapPermissionReplied(p)
        case "question.asked":
            events = mapQuestion(p)
        case "question.replied", "question.rejected":
            guard let request = p["requestID"]?.string, let approval = pendingApprovals.removeValue(forKey: request) else { return [] }
            events = [.approvalResolved(id: approval.id, session: approval.session, turn: approval.turn,
                                        decision: type == "question.replied" ? "answered" : "rejected")]
        case "todo.updated":
            guard let session = p["sessionID"]?.string else { return [] }
            let steps: [JSONValue] = (p["todos"]?.array ?? []).map { todo in
                .object(.compact([
                    "step": JSONValue(todo["content"]?.string),
                    "status": .string(Self.planStatus(todo["status"]?.string)),
                    "priority": JSONValue(todo["priority"]?.string),
                ]))
            }
            events = [.planUpdated(session: session, turn: openTurns[session]?.id, steps: steps)]
        default:
            // server.connected / heartbeat are handled by the client; the rest (sync, lsp.*,
            // session.next.*, file.*, pty.*, …) is not part of the normalized domain.
            return []
        }
        return events
    }

    // MARK: - Resync after a reconnect

    /// Feeds the REST view of one session (`GET /session/{id}/message`, oldest first) after a
    /// (re)connect. REST messages are snapshots, so they go through the same mapping as stream
    /// snapshots, and dedup keeps what was already emitted from being emitted again. Only the
    /// last turn is looked at, and only if it is running or we had it open.
    /// `adoptingAnyUserMessageBut`: for `send --follow`, the user messages that existed before our
    /// prompt; a newer one is our turn even if it already finished while the stream was silent.
    mutating func reconcile(session: String, messages list: [JSONValue], busy: Bool,
                            adoptingAnyUserMessageBut known: Set<String>? = nil) -> [Event] {
        let lastUser = list.lastIndex(where: { $0["info"]?["role"]?.string == "user" })
        let ours = known.map { known in
            lastUser.flatMap { list[$0]["info"]?["id"]?.string }.map { !known.contains($0) && !completedTurns.contains($0) } ?? false
        } ?? false
        guard busy || openTurns[session] != nil || ours else { return [] }
        var events: [Event] = []
        if let lastUser {
            for message in list[lastUser...] {
                if let info = message["info"] { events += mapMessage(info) }
                for part in message["parts"]?.array ?? [] { events += mapPart(part, delta: nil) }
            }
        }
        // OpenCode stores the user message before it marks the session busy: idle with the last
        // user message unanswered is a turn about to start, not one that ended — unless it stays
        // so across several resyncs.
        let answered = lastUser.map { index in
            list[(index + 1)...].contains { $0["info"]?["role"]?.string == "assistant" }
        } ?? true
        if !busy, !answered {
            let seen = (idleUnanswered[session] ?? 0) + 1
            idleUnanswered[session] = seen
            if seen < Self.unansweredIdleLimit { return events }
        }
        idleUnanswered[session] = nil
        events += busy ? setStatus(session, statuses[session] == .waitingApproval ? .waitingApproval : .busy)
                       : goIdle(session: session)
        return events
    }

    /// Feeds the pending permissions (`GET /permission`) after a (re)connect: new ones are
    /// announced; ones we had that are gone were answered while we were away.
    mutating func reconcile(permissions list: [JSONValue], sessions: Set<String>?) -> [Event] {
        reconcile(pending: list, of: .permission, sessions: sessions) { $0.mapPermissionAsked($1, legacy: false) }
    }

    /// Feeds the pending questions (`GET /question`) after a (re)connect, as permissions.
    mutating func reconcile(questions list: [JSONValue], sessions: Set<String>?) -> [Event] {
        reconcile(pending: list, of: .question, sessions: sessions) { $0.mapQuestion($1) }
    }

    private mutating func reconcile(pending list: [JSONValue], of kind: Approval.Kind, sessions: Set<String>?,
                                    announce: (inout Self, JSONValue) -> [Event]) -> [Event] {
        var events: [Event] = []
        var seen: Set<String> = []
        for request in list {
            guard let session = request["sessionID"]?.string, sessions?.contains(session) ?? true else { continue }
            if let id = request["id"]?.string { seen.insert(id) }
            events += announce(&self, request)
        }
        for (request, approval) in pendingApprovals where approval.kind == kind && !seen.contains(request) {
            if let session = approval.session, sessions?.contains(session) ?? true { pendingApprovals[request] = nil }
        }
        return events
    }

    /// Legacy servers list no pending permissions (no `GET /permission`), so after a reconnect
    /// the ones this stream announced are checked against what the server still shows: one
    /// stays pending while its session is busy and its tool part (`extra.tool`) has not
    /// finished; otherwise it was answered while we were away and is forgotten, as
    /// `reconcile(permissions:)` forgets one that left the list. `messages`: the sessions
    /// looked at (oldest message first); `busy`: those of them still running a turn.
    mutating func reconcileStreamedPermissions(messages: [String: [JSONValue]], busy: Set<String>,
                                               sessions: Set<String>?) {
        for (request, approval) in pendingApprovals where approval.kind == .permission {
            guard let session = approval.session, sessions?.contains(session) ?? true else { continue }
            guard busy.contains(session), let list = messages[session] else {
                pendingApprovals[request] = nil
                continue
            }
            let tool = approval.extra["tool"]
            let part = list.lazy.flatMap { $0["parts"]?.array ?? [] }.first {
                $0["callID"]?.string == tool?["callID"]?.string && $0["messageID"]?.string == tool?["messageID"]?.string
            }
            if let status = part?["state"]?["status"]?.string, status == "completed" || status == "error" {
                pendingApprovals[request] = nil
            }
        }
    }

    /// For servers that list no session statuses: the last turn runs while its user message is
    /// unanswered or its last assistant message has no `time.completed`.
    static func lastTurnIsRunning(_ list: [JSONValue]) -> Bool {
        guard let last = list.last?["info"] else { return false }
        if last["role"]?.string == "user" { return true }
        return last["time"]?["completed"].map(\.isNull) ?? true
    }

    /// A session's stored messages (oldest first) as the events of its past turns (`history`).
    mutating func replay(session: String, messages list: [JSONValue], busy: Bool) -> [Event] {
        var events: [Event] = []
        for message in list {
            if let info = message["info"] { events += mapMessage(info) }
            for part in message["parts"]?.array ?? [] { events += mapPart(part, delta: nil) }
        }
        if !busy { events += goIdle(session: session) }
        return events.filter { $0.type != .sessionStatus }
    }

    /// Sessions with a turn in progress (they need a REST look after a reconnect).
    var sessionsWithOpenTurns: Set<String> { Set(openTurns.keys) }

    func hasOpenParts(session: String) -> Bool { parts.contains { $0.value.session == session } }

    // MARK: Sessions and turns

    static func session(from info: JSONValue) -> Session? {
        guard let id = info["id"]?.string else { return nil }
        return Session(id: id, title: info["title"]?.string, directory: info["directory"]?.string,
                       createdAt: info["time"]?["created"]?.double, updatedAt: info["time"]?["updated"]?.double,
                       archived: info["time"]?["archived"].map { !$0.isNull })
    }

    private mutating func mapStatus(session: String, status: JSONValue) -> [Event] {
        switch status["type"]?.string {
        case "idle":
            return goIdle(session: session)
        case "busy":
            return setStatus(session, .busy)
        case "retry":
            let message = status["message"]?.string
            statuses[session] = .retrying
            return [.sessionStatus(session, .retrying, attempt: status["attempt"]?.int.map(Int.init), message: message)]
        default:
            return setStatus(session, .busy)  // image_processing and future "working" states
        }
    }

    private mutating func setStatus(_ session: String, _ status: SessionStatus) -> [Event] {
        guard statuses[session] != status else { return [] }
        statuses[session] = status
        return [.sessionStatus(session, status)]
    }

    /// The session went idle: the open turn (if any) is over. Parts still open are completed
    /// with what we have (the client reconciles from REST first when it can).
    private mutating func goIdle(session: String) -> [Event] {
        var events = setStatus(session, .idle)
        let (ended, turn) = endOpenTurn(session: session)
        guard let turn else { return events }
        events += ended
        for (id, approval) in pendingApprovals where approval.session == session {
            pendingApprovals[id] = nil
        }
        // Prompts taken during the turn that nothing answered before idle (an abort stops the
        // whole loop): each is a turn that ended without a reply.
        for prompt in queuedPrompts.removeValue(forKey: session) ?? [] {
            events += passThrough(prompt, session: session, outcome: turn.outcome == .cancelled ? .cancelled : .completed)
        }
        messages.removeAll { _, message in message.session == session }
        return events
    }

    /// An assistant message answers `prompt`, queued behind the open turn: that turn is over
    /// (its parts complete with what they have; the session stays busy), and the prompt's turn
    /// starts. Prompts queued before it are answered by the same reply (OpenCode answers the
    /// newest user message): each starts and ends first.
    private mutating func advance(session: String, to prompt: String) -> [Event] {
        guard var queue = queuedPrompts[session], let index = queue.firstIndex(where: { $0.id == prompt }) else { return [] }
        var events = endOpenTurn(session: session).events
        for skipped in queue[..<index] {
            events += passThrough(skipped, session: session, outcome: .completed)
        }
        let next = queue[index]
        queue.removeFirst(index + 1)
        if queue.isEmpty { _ = queuedPrompts.removeValue(forKey: session) } else { _ = queuedPrompts.set(queue, forKey: session) }
        openTurns[session] = TurnState(id: next.id, session: session)
        events.append(.turnStarted(session: session, turn: next.id, data: next.started))
        return events + next.held
    }

    /// Ends the session's open turn, if any: its open parts complete with what was seen, then
    /// `turn.completed` (once). Returns those events and the turn that ended.
    private mutating func endOpenTurn(session: String) -> (events: [Event], turn: TurnState?) {
        guard let turn = openTurns.removeValue(forKey: session) else { return ([], nil) }
        var events: [Event] = []
        for part in parts.compactMap({ $0.value.session == session ? $0.value : nil }).sorted(by: { $0.id < $1.id }) {
            events += completePart(HashedKey(part.id), content: nil)
        }
        if !completedTurns.contains(turn.id) {
            completedTurns.insert(turn.id)
            events.append(.turnCompleted(session: session, turn: turn.id, outcome: turn.outcome, error: turn.error, usage: turn.usage))
        }
        return (events, turn)
    }

    /// A queued prompt no reply of its own will answer: its turn starts, shows its message, ends.
    private mutating func passThrough(_ prompt: QueuedPrompt, session: String, outcome: TurnOutcome) -> [Event] {
        guard !completedTurns.contains(prompt.id) else { return [] }
        completedTurns.insert(prompt.id)
        return [.turnStarted(session: session, turn: prompt.id, data: prompt.started)] + prompt.held
            + [.turnCompleted(session: session, turn: prompt.id, outcome: outcome, error: nil, usage: nil)]
    }

    /// Whether `turn` is a prompt still queued in `session` (then its message's events wait).
    private func isQueued(_ turn: String?, in session: String) -> Bool {
        guard !queuedPrompts.isEmpty, let turn else { return false }
        return queuedPrompts[session]?.contains { $0.id == turn } ?? false
    }

    /// Keeps `events` of a queued prompt's own message until its turn starts.
    private mutating func hold(_ events: [Event], for turn: String, in session: String) {
        _ = queuedPrompts.update(session) { queue in
            if let index = queue.firstIndex(where: { $0.id == turn }) { queue[index].held += events }
        }
    }

    private mutating func mapSessionError(_ p: JSONValue) -> [Event] {
        guard let session = p["sessionID"]?.string else {
            let message = p["error"]?["data"]?["message"]?.string ?? "unknown error"
            return [.error(TetherError(.failed, "OpenCode reported an error: \(message)"))]
        }
        let name = p["error"]?["name"]?.string
        let message = p["error"]?["data"]?["message"]?.string ?? name ?? "unknown error"
        if name == "MessageAbortedError" {
            openTurns[session]?.outcome = .cancelled
            return []
        }
        if var turn = openTurns[session] {
            turn.outcome = .failed
            turn.error = "\(name ?? "Error"): \(message)"
            openTurns[session] = turn
        }
        return [.error(TetherError(.failed, "\(name ?? "Error"): \(message)"), session: session, turn: openTurns[session]?.id)]
    }

    private mutating func mapMessage(_ info: JSONValue) -> [Event] {
        guard let id = info["id"]?.string, let session = info["sessionID"]?.string else { return [] }
        let role: PartRole = info["role"]?.string == "user" ? .user : .assistant
        var events: [Event] = []
        if role == .user {
            if messages[id] == nil, !completedTurns.contains(id) {
                let started: JSONObject = .compact([
                    "agent": JSONValue(info["agent"]?.string),
                    "model": JSONValue(Self.modelName(info["model"]?["providerID"]?.string, info["model"]?["modelID"]?.string)),
                ])
                if let open = openTurns[session], open.id != id {
                    // Sent while a turn runs: OpenCode answers it after that turn (see QueuedPrompt).
                    if !isQueued(id, in: session) {
                        var queue = queuedPrompts[session] ?? []
                        queue.append(QueuedPrompt(id: id, started: started))
                        _ = queuedPrompts.set(queue, forKey: session)
                    }
                } else if openTurns[session] == nil {
                    openTurns[session] = TurnState(id: id, session: session)
                    events.append(.turnStarted(session: session, turn: id, data: started))
                }
            }
            messages[id] = MessageState(role: .user, session: session, turn: id)
            return events
        }
        let turn = info["parentID"]?.string ?? openTurns[session]?.id
        if isQueued(turn, in: session), let turn { events += advance(session: session, to: turn) }
        var state = messages[id] ?? MessageState(role: .assistant, session: session, turn: turn)
        state.turn = turn
        if let error = info["error"], !error.isNull, let turnID = turn, openTurns[session]?.id == turnID {
            let name = error["name"]?.string
            if name == "MessageAbortedError" {
                openTurns[session]?.outcome = .cancelled
            } else {
                openTurns[session]?.outcome = .failed
                openTurns[session]?.error = "\(name ?? "Error"): \(error["data"]?["message"]?.string ?? "")"
            }
        }
        if let tokens = info["tokens"], tokens["input"] != nil {
            let model = Self.modelName(info["providerID"]?.string, info["modelID"]?.string)
            let usage = Usage(inputTokens: tokens["input"]?.int.map(Int.init), outputTokens: tokens["output"]?.int.map(Int.init),
                              reasoningTokens: tokens["reasoning"]?.int.map(Int.init),
                              cacheReadTokens: tokens["cache"]?["read"]?.int.map(Int.init),
                              cacheWriteTokens: tokens["cache"]?["write"]?.int.map(Int.init),
                              cost: info["cost"]?.double, contextWindow: model.flatMap { contextWindows[$0] })
            let isEmpty = (usage.inputTokens ?? 0) == 0 && (usage.outputTokens ?? 0) == 0 && (usage.cost ?? 0) == 0
            if !isEmpty, usage != state.usage {
                state.usage = usage
                if let turnID = turn, openTurns[session]?.id == turnID { openTurns[session]?.usage = usage }
                events.append(.usageUpdated(session: session, turn: turn, usage: usage))
            }
        }
        messages[id] = state
        return events
    }

    static func modelName(_ provider: String?, _ model: String?) -> String? {
        guard let model else { return nil }
        return provider.map { "\($0)/\(model)" } ?? model
    }

    // MARK: Parts

    private mutating func mapPart(_ part: JSONValue, delta: String?) -> [Event] {
        guard let snapshot = OpenCodePartSnapshot(part) else { return [] }
        return mapPart(snapshot, delta: delta)
    }

    mutating func mapPart(_ snapshot: OpenCodePartSnapshot, delta: String?) -> [Event] {
        var events: [Event] = []
        mapPart(snapshot, delta: delta, into: &events)
        return events
    }

    private mutating func mapPart(_ snapshot: OpenCodePartSnapshot, delta: String?, into events: inout [Event]) {
        let id = snapshot.id, kind = snapshot.kind, session = snapshot.session, messageID = snapshot.message
        let key = HashedKey(id)
        if completedParts.contains(key) { return }
        let start = events.count
        let message = messages[messageID]
        let openTurn = openTurns[session]?.id
        let role = message?.role ?? (messageID == openTurn ? .user : .assistant)
        let turn = message?.turn ?? openTurn
        // Taken out of the map while it changes, so appending to its text does not copy it.
        var place: RecentMap<HashedKey, PartState>.Place?
        var state = takePart(key, place: &place) ?? PartState(id: id, session: session, message: messageID, kind: kind)
        let final = snapshot.isFinal || role == .user
        // A text part's content is built only when an event carries it: kept for later, its
        // text would be replaced by what was assembled (`LastSnapshot`).
        var content: JSONObject?
        if case .text(_, let synthetic) = snapshot.body {
            state.snapshot = .text(role: role, synthetic: synthetic)
            if final { content = snapshot.content(role: role) }
        } else {
            let whole = snapshot.content(role: role)
            state.snapshot = .content(whole)
            content = whole
        }
        if !state.started {
            state.started = true
            // Built with its text empty, not copied from `content` and changed.
            let startContent = snapshot.text != nil ? snapshot.content(role: role, emptyText: true) : content ?? [:]
            events.append(.part(.partStarted, session: session, turn: turn, part: id, kind: kind, content: startContent))
        }
        if let text = snapshot.text, role != .user {
            if let delta, !delta.isEmpty {
                // Legacy: the snapshot carries the accumulated text and `delta` the new piece.
                events.append(.partDelta(session: session, turn: turn, part: id, kind: kind, delta: delta))
                appendText(delta, to: &state)
            } else if text.utf8.count > state.sentBytes, text.utf8.starts(with: state.text.utf8) {
                // A snapshot that moved on without deltas (or after we lost some): send the rest,
                // after what was sent (more than `text` holds once a piece was not assembled).
                let rest = String(decoding: text.utf8.dropFirst(state.sentBytes), as: UTF8.self)
                events.append(.partDelta(session: session, turn: turn, part: id, kind: kind, delta: rest))
                appendText(rest, to: &state)
            }
        }
        store(state, forKey: key, at: place)
        // A user's own text is whole when it appears; assistant parts are final when they say so.
        if final, let content {
            events += completePart(key, content: content)
        }
        if role == .user, isQueued(turn, in: session), let turn {
            hold(Array(events[start...]), for: turn, in: session)
            events.removeSubrange(start...)
        }
    }

    private mutating func mapDelta(_ read: OpenCodePartDelta, into events: inout [Event]) {
        let partID = read.part, session = read.session, field = read.field, delta = read.delta
        let key = HashedKey(partID)
        if completedParts.contains(key) { return }
        var place: RecentMap<HashedKey, PartState>.Place?
        var state: PartState
        if let taken = takePart(key, place: &place) {
            state = taken
        } else {
            // A delta for a part we never saw start (we joined mid-stream): start it as text.
            let messageID = read.message ?? ""
            state = PartState(id: partID, session: session, message: messageID, kind: .text, started: true)
            events.append(.part(.partStarted, session: session, turn: messages[messageID]?.turn ?? openTurns[session]?.id,
                                part: partID, kind: .text, content: ["text": "", "role": "assistant"]))
        }
        if field == "text" { appendText(delta, to: &state) }
        store(state, forKey: key, at: place)
        events.append(.partDelta(session: session, turn: messages[state.message]?.turn ?? openTurns[session]?.id,
                                 part: partID, kind: state.kind, field: field, delta: delta))
    }

    // MARK: Open parts, within their bounds

    /// Takes a part out to change it (its text counts again when it is stored); `place`: where it
    /// was, for `store`. (Only the returned state may hold its text while it changes, or each
    /// append would copy the whole text.)
    private mutating func takePart(_ key: HashedKey, place: inout RecentMap<HashedKey, PartState>.Place?) -> PartState? {
        guard let taken = parts.take(key) else { return nil }
        assembledBytes -= taken.value.text.utf8.count
        place = taken.place
        return taken.value
    }

    /// Stores a part as the newest, under `key` (its id's) (`place`: where it was taken from,
    /// reused when it still is).
    private mutating func store(_ state: PartState, forKey key: HashedKey, at place: RecentMap<HashedKey, PartState>.Place? = nil) {
        assembledBytes += state.text.utf8.count
        let released = place.map { parts.putBack(state, forKey: key, at: $0) } ?? parts.set(state, forKey: key)
        if let released { assembledBytes -= released.value.text.utf8.count }
    }

    /// A part leaves for good (completed or removed).
    private mutating func releasePart(_ key: HashedKey) -> PartState? {
        var place: RecentMap<HashedKey, PartState>.Place?
        return takePart(key, place: &place)
    }

    /// Records a piece of text that was sent, and assembles it while it fits the limits.
    private mutating func appendText(_ piece: String, to state: inout PartState) {
        let count = piece.utf8.count
        state.sentBytes += count
        let own = state.text.utf8.count  // taken out: not in `assembledBytes` while it changes
        guard !state.truncated, own + count <= Self.partTextLimit, assembledBytes + own + count <= Self.assembledTextBudget else {
            state.truncated = true
            textNotAssembled += 1
            return
        }
        state.text += piece
    }

    /// Emits `part.completed` once. `content` nil: finish with the last snapshot and the text
    /// assembled from deltas.
    private mutating func completePart(_ key: HashedKey, content: JSONObject?) -> [Event] {
        guard let state = releasePart(key), !completedParts.contains(key) else { return [] }
        completedParts.insert(key)
        var final: JSONObject
        switch (content, state.snapshot) {
        case (let content?, _):
            final = content
        case (nil, .text(let role, let synthetic)):
            final = OpenCodePartSnapshot.textContent(state.text, kind: state.kind, role: role, synthetic: synthetic)
        case (nil, .content(let last)):
            final = last
        }
        if state.kind == .text || state.kind == .reasoning {
            if content == nil || (final["text"]?.string ?? "").isEmpty && !state.text.isEmpty {
                final["text"] = .string(state.text)
            }
            if state.kind == .text, final["role"] == nil { final["role"] = "assistant" }
        }
        return [.part(.partCompleted, session: state.session, turn: messages[state.message]?.turn ?? openTurns[state.session]?.id,
                      part: key.text, kind: state.kind, content: final)]
    }

    // MARK: Approvals

    private mutating func mapPermissionAsked(_ p: JSONValue, legacy: Bool) -> [Event] {
        guard let approval = Self.approval(fromPermission: p, turn: p["sessionID"]?.string.flatMap { openTurns[$0]?.id }) else { return [] }
        let request = CompositeID.split(approval.id, count: 2)?.last ?? approval.id
        guard pendingApprovals[request] == nil else { return [] }
        pendingApprovals[request] = approval
        var events = [Event.approvalRequested(approval)]
        if let session = approval.session { events += setStatus(session, .waitingApproval) }
        return events
    }

    /// A `PermissionRequest` (current) or legacy `permission.updated` as an approval.
    static func approval(fromPermission p: JSONValue, turn: String?) -> Approval? {
        guard let request = p["id"]?.string, let session = p["sessionID"]?.string else { return nil }
        let permission = p["permission"]?.string ?? p["type"]?.string ?? "permission"
        var patterns = p["patterns"]?.array?.compactMap(\.string) ?? []
        if patterns.isEmpty {
            if let single = p["pattern"]?.string { patterns = [single] } else { patterns = p["pattern"]?.array?.compactMap(\.string) ?? [] }
        }
        let command = p["metadata"]?["command"]?.string ?? (permission == "bash" ? patterns.first : nil)
        let risk: Approval.Risk = command.map(CommandRisk.classify)
            ?? (["edit", "write", "patch"].contains(permission) ? .medium : .low)
        var extra: JSONObject = ["permission": .string(permission)]
        if let always = p["always"]?.array, !always.isEmpty { extra["always"] = .array(always) }
        if let tool = p["tool"], !tool.isNull {
            extra["tool"] = tool
        } else if let callID = p["callID"]?.string {
            // Legacy `permission.updated` names its tool call at the top level.
            extra["tool"] = .object(.compact(["messageID": JSONValue(p["messageID"]?.string), "callID": .string(callID)]))
        }
        return Approval(id: CompositeID.join([session, request]), session: session, turn: turn, kind: .permission,
                        title: p["title"]?.string ?? "\(permission): \(patterns.joined(separator: " "))",
                        command: command, patterns: patterns, options: OpenCodeDecision.supported, risk: risk, extra: extra)
    }

    private mutating func mapPermissionReplied(_ p: JSONValue) -> [Event] {
        guard let request = p["requestID"]?.string ?? p["permissionID"]?.string else { return [] }
        let reply = p["reply"]?.string ?? p["response"]?.string ?? ""
        let session = p["sessionID"]?.string
        let approval = pendingApprovals.removeValue(forKey: request)
        guard approval != nil || session != nil else { return [] }
        var events: [Event] = [.approvalResolved(id: approval?.id ?? CompositeID.join([session!, request]),
                                                 session: session ?? approval?.session,
                                                 turn: approval?.turn ?? session.flatMap { openTurns[$0]?.id },
                                                 decision: OpenCodeDecision.decision(forReply: reply))]
        if let session, !pendingApprovals.values.contains(where: { $0.session == session }), statuses[session] == .waitingApproval {
            events += setStatus(session, .busy)
        }
        return events
    }

    private mutating func mapQuestion(_ p: JSONValue) -> [Event] {
        guard let request = p["id"]?.string, let session = p["sessionID"]?.string, pendingApprovals[request] == nil else { return [] }
        let questions = p["questions"]?.array ?? []
        let title = questions.compactMap { $0["question"]?.string }.joined(separator: " / ")
        let approval = Approval(id: CompositeID.join([session, request]), session: session, turn: openTurns[session]?.id,
                                kind: .question, title: title.isEmpty ? "question" : title, options: [], risk: .low,
                                extra: ["questions": .array(questions)])
        pendingApprovals[request] = approval
        return [.approvalRequested(approval)]
    }

    static func planStatus(_ status: String?) -> String {
        switch status {
        case "completed": return "completed"
        case "in_progress": return "in_progress"
        case "cancelled": return "cancelled"
        default: return "pending"
        }
    }
}
