import TetherCore
import TetherStreaming

/// Codex app-server messages → normalized events, for every backend that carries them (the
/// `codex` backend speaks to the app-server itself; CodexMonitor relays its messages inside
/// `app-server-event`). A pure state machine: `map` takes one raw message (a notification, or a
/// server→client request) and returns the domain events it means; `reconcile` takes a thread
/// re-read after a (re)connect and returns only what the stream missed. No I/O here.
///
/// Ids: messages come from a *scope* — CodexMonitor's workspace, or none for an app-server
/// spoken to directly — and a session is `SCOPE~THREAD` or just `THREAD`
/// (``CodexSessionID``); turns and parts keep Codex's ids. Every part completes
/// once (`item/completed` is authoritative; a turn that ends with parts still open completes them
/// from what was seen). Approvals are Codex's server→client requests, deduplicated by scope +
/// request id + item (current Codex re-announces pending ones on `thread/resume`); those of an
/// app-server that was replaced (`codex/connected`) are resolved as `unknown`.
public struct CodexAppServerMapper: Sendable {
    public struct PendingApproval: Sendable {
        public var approval: Approval
        public var id: CodexApprovalID
        public var item: String?
        public var turn: String?
    }

    private struct TurnState {
        var session: String
        var id: String
        var error: String?
        var usage: Usage?
        var diff: String?
    }

    private struct PartState {
        var session: String
        var turn: String?
        var id: String
        var kind: PartKind
        var item: JSONValue?
        var sequence: Int
        /// Text and output assembled from deltas (what completes a part whose item/completed
        /// never comes), within the limits: once a piece is not kept, no later one of the same
        /// field is, so each stays a prefix of what streamed (never one with a hole in it).
        var text = ""
        var output = ""
        var textCut = false
        var outputCut = false

        /// What it holds against `TextLimits.overAll`.
        var assembledBytes: Int { text.utf8.count + output.utf8.count }

        /// Appends `piece` to the field while it fits `limit` (the field's) and `budgetLeft`
        /// (over all items), in bytes; false when it was not kept.
        mutating func append(_ piece: String, toOutput: Bool, limit: Int, budgetLeft: Int) -> Bool {
            let count = piece.utf8.count
            if toOutput {
                guard !outputCut, output.utf8.count + count <= limit, count <= budgetLeft else {
                    outputCut = true
                    return false
                }
                output += piece
            } else {
                guard !textCut, text.utf8.count + count <= limit, count <= budgetLeft else {
                    textCut = true
                    return false
                }
                text += piece
            }
            return true
        }
    }

    /// Text (or output) assembled from deltas: at most `perItem` bytes an item's field, and
    /// `overAll` over all open items.
    public struct TextLimits: Sendable {
        public var perItem = 8 << 20
        public var overAll = 16 << 20

        public init(perItem: Int = 8 << 20, overAll: Int = 16 << 20) {
            self.perItem = perItem
            self.overAll = overAll
        }
    }

    public let textLimits: TextLimits
    /// Bytes of text and output the open parts hold.
    private var assembledBytes = 0
    /// Deltas not assembled because a limit was reached (the deltas themselves still go out).
    public private(set) var textNotAssembled = 0

    // What is kept per turn, part and session is bounded (`RecentMap`): a stream of turns or
    // items that never finish lets go of the oldest instead of growing; `releasedState` counts
    // it so the stream can say so once.
    private var openTurns = RecentMap<HashedKey, TurnState>(capacity: 1024) {
        didSet { lastOpenTurn = nil }  // whatever changed, it may have been that turn
    }
    /// The turn `ensureTurn` last found or made open: a busy stream names the same turn line
    /// after line. Forgotten at any change to `openTurns`.
    private var lastOpenTurn: (session: String, turn: String)?
    private var finishedTurns = RecentSet(capacity: 4096, of: HashedKey.self)
    private var openParts = RecentMap<HashedKey, PartState>(capacity: 1024)
    private var completedParts = RecentSet(capacity: 16_384, of: HashedKey.self)
    private var seenRequests = RecentSet(capacity: 4096)
    public private(set) var pendingApprovals: [String: PendingApproval] = [:]
    private var statuses = RecentMap<String, SessionStatus>(capacity: 4096)
    /// Sessions whose turns we have followed (live or by reconcile): a reconcile of any other
    /// session starts from its running turn instead of replaying its history.
    private var knownSessions = RecentSet(capacity: 4096)

    /// Open state let go of because a bound was reached.
    public var releasedState: Int { openTurns.evicted + openParts.evicted + statuses.evicted }
    private var partSequence = 0

    /// The last session id made: a stream names the same scope and thread frame after frame.
    private var lastSession: (scope: String?, thread: String, id: String)?

    /// Whether the backend answers Codex's questions (`requestUserInput`): they then offer
    /// accept (with answers) and decline; otherwise nothing, as there is no way to answer.
    public let answersQuestions: Bool

    public init(textLimits: TextLimits = TextLimits(), answersQuestions: Bool = false) {
        self.textLimits = textLimits
        self.answersQuestions = answersQuestions
    }

    /// The last two state keys made: a busy stream asks for its turn's and its item's, line after line.
    private var recentKeys: [(session: String, id: String, key: HashedKey)] = []

    /// `Self.key(session, id)`, without building it again when it was one of the last two asked for.
    private mutating func stateKey(_ session: String, _ id: String) -> HashedKey {
        if let index = recentKeys.firstIndex(where: { $0.id == id && $0.session == session }) { return recentKeys[index].key }
        let key = Self.key(session, id)
        if recentKeys.count == 2 { recentKeys.removeFirst() }
        recentKeys.append((session, id, key))
        return key
    }

    public mutating func sessionID(scope: String?, thread: String) -> String {
        if let lastSession, lastSession.scope == scope, lastSession.thread == thread { return lastSession.id }
        let id = CodexSessionID.make(scope: scope, thread: thread)
        lastSession = (scope, thread, id)
        return id
    }

    /// Sessions with a turn in progress, as far as we know.
    public var openSessions: [String] { Set(openTurns.values.map(\.session)).sorted() }

    public func approvals(session: String? = nil) -> [Approval] {
        pendingApprovals.values.map(\.approval).filter { session == nil || $0.session == session }.sorted { $0.id < $1.id }
    }

    /// The app-server methods that can produce events (others are logged at debug level).
    public static let handledMethods: Set<String> = [
        "thread/started", "thread/status/changed", "thread/name/updated", "thread/archived", "thread/unarchived",
        "turn/started", "turn/completed", "item/started", "item/completed", "item/agentMessage/delta",
        "item/plan/delta", "item/reasoning/summaryTextDelta", "item/reasoning/textDelta",
        "item/commandExecution/outputDelta", "item/fileChange/outputDelta", "turn/plan/updated", "turn/diff/updated",
        "thread/tokenUsage/updated", "error", "serverRequest/resolved", "codex/connected",
        "item/commandExecution/requestApproval", "item/fileChange/requestApproval",
        "item/permissions/requestApproval", "item/tool/requestUserInput",
    ]

    /// One raw app-server message from `scope`: a notification, or a request (it has an `id`).
    public mutating func map(scope: String?, message: JSONValue) -> [Event] {
        guard let method = message["method"]?.string else { return [] }
        let p = message["params"] ?? .null
        if let id = message["id"], !id.isNull {
            return mapRequest(scope: scope, id: id, method: method, params: p)
        }
        let thread = Self.string(p, "threadId", "thread_id")
        let session = thread.map { sessionID(scope: scope, thread: $0) }
        let turn = Self.string(p, "turnId", "turn_id")

        switch method {
        case "thread/started":
            guard let thread = p["thread"], let info = CodexThread.session(scope: scope, thread: thread) else { return [] }
            return [.session(.sessionCreated, info)]
        case "thread/status/changed":
            guard let session, let status = CodexThread.status(p["status"]) else { return [] }
            // `idle` comes just before `turn/completed`, and when a thread is loaded while our
            // prompt's turn starts: the turn's end says idle itself, once it has ended.
            if status == .idle, openTurns.values.contains(where: { $0.session == session }) { return [] }
            return setStatus(session, status)
        case "thread/name/updated":
            guard let session else { return [] }
            return [.session(.sessionUpdated, Session(id: session, title: Self.string(p, "threadName", "name")))]
        case "thread/archived", "thread/unarchived":
            guard let session else { return [] }
            return [.session(.sessionUpdated, Session(id: session, archived: method == "thread/archived"))]
        case "turn/started":
            guard let session, let id = p["turn"]?["id"]?.string ?? turn else { return [] }
            return ensureTurn(session: session, turn: id)
        case "turn/completed":
            guard let session, let turnObject = p["turn"] else { return [] }
            return completeTurn(session: session, turn: turnObject)
        case "item/started":
            guard let session, let item = p["item"] else { return [] }
            return startItem(session: session, turn: turn, item: item)
        case "item/completed":
            guard let session, let item = p["item"] else { return [] }
            return completeItem(session: session, turn: turn, item: item)
        case "item/agentMessage/delta", "item/plan/delta", "item/reasoning/summaryTextDelta", "item/reasoning/textDelta",
             "item/commandExecution/outputDelta", "item/fileChange/outputDelta":
            guard let target = CodexItemDelta.target(ofMethod: method) else { return [] }
            return delta(session, turn, item: Self.string(p, "itemId", "item_id"), delta: p["delta"]?.string,
                         kind: target.kind, field: target.field)
        case "turn/plan/updated":
            guard let session else { return [] }
            let steps: [JSONValue] = (p["plan"]?.array ?? []).map { step in
                .object(.compact(["step": JSONValue(step["step"]?.string), "status": JSONValue(Self.planStatus(step["status"]?.string))]))
            }
            var events = turn.map { ensureTurn(session: session, turn: $0) } ?? []
            events.append(.planUpdated(session: session, turn: turn, steps: steps, explanation: p["explanation"]?.string))
            return events
        case "turn/diff/updated":
            guard let session, let turn, let diff = p["diff"]?.string else { return [] }
            return updateDiff(session: session, turn: turn, diff: diff)
        case "thread/tokenUsage/updated":
            guard let session, let usage = Self.usage(p["tokenUsage"] ?? p["usage"]) else { return [] }
            if let turn {
                // Codex sends the last usage again on every thread/resume: said once.
                let key = Self.key(session, turn)
                if openTurns[key]?.usage == usage { return [] }
                openTurns[key]?.usage = usage
            }
            return [.usageUpdated(session: session, turn: turn, usage: usage)]
        case "error":
            return mapError(session: session, turn: turn, params: p)
        case "serverRequest/resolved":
            guard let request = p["requestId"] ?? p["request_id"] else { return [] }
            let token = CodexApprovalID.token(for: request)
            let resolved = pendingApprovals.values.filter {
                $0.id.scope == scope && CodexApprovalID.token(for: $0.id.request) == token
                    && (thread == nil || $0.id.thread == thread)
            }
            // The notification does not say how it was answered (and `approve` may run in
            // another process): undetermined, unless the answer is ours (CodexAnswerLedger).
            return resolved.sorted { $0.approval.id < $1.approval.id }
                .flatMap { resolve($0, decision: CodexDecision.undetermined) }
        case "codex/connected":
            return processReplaced(scope: scope)
        default:
            return []  // codex/stderr, account/*, mcpServer/*, thread/live_* …: not part of the domain
        }
    }

    /// `codex/connected` (or a stdio child restarted): a new app-server serves `scope`, so whatever ran
    /// there before died with the old process. Its requests can no longer be answered (and their
    /// ids will be reused): resolved, how unknown. Its turns will never say they ended; they are
    /// not ended here, because a turn `send` started in the new process may already be held open
    /// (its answer can be applied before this notification): the stream re-reads the threads
    /// instead (`hasOpenTurns`), and Codex reads the dead ones back `interrupted`. Only this
    /// scope: others may share the new process or have their own.
    public mutating func processReplaced(scope: String?) -> [Event] {
        pendingApprovals.values.filter { $0.id.scope == scope }.sorted { $0.approval.id < $1.approval.id }
            .flatMap { resolve($0, decision: CodexDecision.undetermined) }
    }

    /// Whether a turn of `scope` is held open (a resync would re-read its thread).
    public func hasOpenTurns(inScope scope: String?) -> Bool {
        openTurns.values.contains { CodexSessionID.parse($0.session, scoped: scope != nil)?.scope == scope }
    }

    // MARK: - Turns

    /// A turn known to have started though its `turn/started` may not have been seen (`send`'s
    /// answer names it): held open from now on, so a re-read after a reconnect completes it
    /// even if it began and ended while the link was down. Its `turn/started` then says nothing.
    public mutating func started(session: String, turn: String) -> [Event] {
        ensureTurn(session: session, turn: turn)
    }

    private mutating func ensureTurn(session: String, turn: String) -> [Event] {
        if let lastOpenTurn, lastOpenTurn.turn == turn, lastOpenTurn.session == session { return [] }
        let key = stateKey(session, turn)
        if openTurns[key] != nil {
            lastOpenTurn = (session, turn)
            return []
        }
        guard !finishedTurns.contains(key) else { return [] }
        openTurns[key] = TurnState(session: session, id: turn)
        lastOpenTurn = (session, turn)
        knownSessions.insert(session)
        return [.turnStarted(session: session, turn: turn)] + setStatus(session, .busy)
    }

    private mutating func completeTurn(session: String, turn: JSONValue) -> [Event] {
        guard let id = turn["id"]?.string else { return [] }
        let key = Self.key(session, id)
        guard !finishedTurns.contains(key) else { return [] }
        var events = ensureTurn(session: session, turn: id)
        // Newer app-servers list the turn's items here: authoritative for any we missed.
        for item in turn["items"]?.array ?? [] {
            events += completeItem(session: session, turn: id, item: item)
        }
        let outcome = CodexThreadItem.outcome(ofTurnStatus: turn["status"]?.string) ?? .completed
        let state = openTurns.removeValue(forKey: key)
        finishedTurns.insert(key)

        let leftOpen = openParts.values.filter { $0.session == session && $0.turn == id }.sorted { $0.sequence < $1.sequence }
        for part in leftOpen {
            removePart(Self.key(session, part.id))
            guard completedParts.insert(Self.key(session, part.id)) else { continue }
            events.append(.part(.partCompleted, session: session, turn: id, part: part.id, kind: part.kind,
                                content: Self.finalContent(part, outcome: outcome)))
        }
        if let diff = state?.diff {
            events.append(.part(.partCompleted, session: session, turn: id, part: Self.diffPart(turn: id), kind: .patch,
                                content: Self.diffContent(diff)))
        }
        // Requests of a finished turn can no longer be answered (Codex clears them).
        for (approvalID, pending) in pendingApprovals where pending.approval.session == session && pending.turn == id {
            pendingApprovals[approvalID] = nil
        }
        let error = outcome == .failed ? (turn["error"]?["message"]?.string ?? state?.error ?? "the turn failed") : nil
        events.append(.turnCompleted(session: session, turn: id, outcome: outcome, error: error, usage: state?.usage))
        if !openTurns.values.contains(where: { $0.session == session }) {
            events += setStatus(session, .idle)
        }
        return events
    }

    // MARK: - Items

    public mutating func startItem(session: String, turn: String?, item: JSONValue) -> [Event] {
        guard let id = item["id"]?.string, let kind = CodexThreadItem.kind(of: item) else { return [] }
        var events = turn.map { ensureTurn(session: session, turn: $0) } ?? []
        let key = stateKey(session, id)
        guard !completedParts.contains(key) else { return events }
        let part = PartState(session: session, turn: turn, id: id, kind: kind, item: item, sequence: partSequence + 1)
        let holds = part.assembledBytes
        guard case .inserted(let released) = openParts.insert(part, forKey: key, orUpdate: { $0.item = item }) else {
            return events  // a fresher snapshot (a re-read): no second part.started
        }
        partSequence += 1
        countOpened(holding: holds, released: released)
        var content = CodexThreadItem.content(of: item)
        if kind == .text || kind == .reasoning || kind == .plan { content["text"] = "" }
        events.append(.part(.partStarted, session: session, turn: turn, part: id, kind: kind, content: content))
        return events
    }

    private mutating func completeItem(session: String, turn: String?, item: JSONValue) -> [Event] {
        guard let id = item["id"]?.string, let kind = CodexThreadItem.kind(of: item) else { return [] }
        var events = turn.map { ensureTurn(session: session, turn: $0) } ?? []
        let key = stateKey(session, id)
        let open = removePart(key)
        if completedParts.insert(key) {
            events.append(.part(.partCompleted, session: session, turn: turn ?? open?.turn, part: id, kind: kind,
                                content: CodexThreadItem.content(of: item)))
        }
        // Resolved without `serverRequest/resolved` (older app-servers, or while we were away).
        let status = item["status"]?.string
        for pending in pendingApprovals.values.filter({ $0.approval.session == session && $0.item == id })
            .sorted(by: { $0.approval.id < $1.approval.id }) {
            events += resolve(pending, decision: CodexDecision.decision(fromItemStatus: status))
        }
        return events
    }

    /// A message read straight from its bytes (``CodexHotMessage``): the same events as the
    /// message parsed whole.
    public mutating func map(scope: String?, hot: CodexHotMessage) -> [Event] {
        switch hot {
        case .delta(let method, let thread, let turn, let item, let text):
            guard let target = CodexItemDelta.target(ofMethod: method) else { return [] }
            let session = thread.map { sessionID(scope: scope, thread: $0) }
            return delta(session, turn, item: item, delta: text, kind: target.kind, field: target.field)
        case .itemStarted(let thread, let turn, let item):
            guard let thread else { return [] }
            return startItem(session: sessionID(scope: scope, thread: thread), turn: turn, item: item)
        }
    }

    public mutating func delta(_ session: String?, _ turn: String?, item: String?, delta: String?, kind: PartKind,
                                field: String) -> [Event] {
        guard let session, let id = item, let delta, !delta.isEmpty else { return [] }
        let key = stateKey(session, id)
        let toOutput = field == "output", limit = textLimits.perItem, budgetLeft = textLimits.overAll - assembledBytes
        // An open part is never a completed one (a part leaves one as it joins the other), so
        // the delta of an open part takes one lookup.
        let kept = openParts.update(key, { $0.append(delta, toOutput: toOutput, limit: limit, budgetLeft: budgetLeft) })
        guard kept != nil || !completedParts.contains(key) else { return [] }  // late, or already read whole after a resync
        var events = turn.map { ensureTurn(session: session, turn: $0) } ?? []
        if let kept {
            noteAppended(delta, kept: kept)
        } else {
            // Its item/started was missed (dropped by a lagging daemon): start it from what we know.
            partSequence += 1
            var part = PartState(session: session, turn: turn, id: id, kind: kind, item: nil, sequence: partSequence)
            if !part.append(delta, toOutput: toOutput, limit: limit, budgetLeft: budgetLeft) { textNotAssembled += 1 }
            insertPart(part, key)  // counts what it holds
            var content: JSONObject = kind == .text ? ["role": "assistant", "text": ""] : [:]
            if kind == .reasoning || kind == .plan { content["text"] = "" }
            events.append(.part(.partStarted, session: session, turn: turn, part: id, kind: kind, content: content))
        }
        events.append(.partDelta(session: session, turn: turn, part: id, kind: kind, field: field, delta: delta))
        return events
    }

    // MARK: Open parts, within their bounds

    /// Opens a part; the oldest is let go of when too many are open.
    private mutating func insertPart(_ part: PartState, _ key: HashedKey) {
        let holds = part.assembledBytes
        countOpened(holding: holds, released: openParts.set(part, forKey: key))
    }

    /// Counts what a part just opened holds, and what the one let go of to make room held.
    private mutating func countOpened(holding bytes: Int, released: (key: HashedKey, value: PartState)?) {
        assembledBytes += bytes
        if let released { assembledBytes -= released.value.assembledBytes }
    }

    /// A part leaves (completed, or its turn ended).
    @discardableResult
    private mutating func removePart(_ key: HashedKey) -> PartState? {
        guard let part = openParts.removeValue(forKey: key) else { return nil }
        assembledBytes -= part.assembledBytes
        return part
    }

    /// Counts a piece appended to a part that is open (and so already counted).
    private mutating func noteAppended(_ piece: String, kept: Bool) {
        if kept { assembledBytes += piece.utf8.count } else { textNotAssembled += 1 }
    }

    /// A part whose turn ended before its `item/completed`: its last snapshot, with the text or
    /// output gathered from deltas, and a running status settled by the turn's outcome.
    private static func finalContent(_ part: PartState, outcome: TurnOutcome) -> JSONObject {
        var content: JSONObject = part.item.map(CodexThreadItem.content(of:)) ?? (part.kind == .text ? ["role": "assistant"] : [:])
        if part.kind == .text || part.kind == .reasoning || part.kind == .plan {
            if (content["text"]?.string ?? "").isEmpty { content["text"] = .string(part.text) }
        }
        if !part.output.isEmpty, (content["output"]?.string ?? "").isEmpty { content["output"] = .string(part.output) }
        if let status = content["status"]?.string, status == PartStatus.running.rawValue || status == PartStatus.pending.rawValue {
            content["status"] = .string((outcome == .completed ? PartStatus.completed : PartStatus.failed).rawValue)
        }
        return content
    }

    // MARK: - Diff, usage, errors

    private mutating func updateDiff(session: String, turn: String, diff: String) -> [Event] {
        var events = ensureTurn(session: session, turn: turn)
        let key = Self.key(session, turn)
        guard openTurns[key] != nil else { return events }
        let first = openTurns[key]?.diff == nil
        openTurns[key]?.diff = diff
        // The aggregated diff is one `patch` part per turn: started now, completed with the
        // final diff when the turn ends (a diff is replaced, not appended to).
        if first {
            events.append(.part(.partStarted, session: session, turn: turn, part: Self.diffPart(turn: turn), kind: .patch,
                                content: Self.diffContent(diff)))
        }
        return events
    }

    public static func diffPart(turn: String) -> String { CompositeID.join([turn, "diff"]) }

    public static func diffContent(_ diff: String) -> JSONObject {
        var files: [String] = []
        for line in diff.split(separator: "\n", omittingEmptySubsequences: true) where line.hasPrefix("+++ ") {
            var path = String(line.dropFirst(4))
            if path == "/dev/null" { continue }
            if path.hasPrefix("b/") { path.removeFirst(2) }
            if !files.contains(path) { files.append(path) }
        }
        if files.isEmpty {
            // Deleted files only have a `--- a/path` side.
            for line in diff.split(separator: "\n") where line.hasPrefix("--- a/") {
                files.append(String(line.dropFirst(6)))
            }
        }
        return ["diff": .string(diff), "files": JSONValue(files)]
    }

    /// `tokenUsage.total` (the thread's running totals: each report replaces the last).
    public static func usage(_ tokenUsage: JSONValue?) -> Usage? {
        guard let tokenUsage, tokenUsage.object != nil else { return nil }
        let total = tokenUsage["total"] ?? tokenUsage
        func int(_ key: String) -> Int? { total[key]?.int.map { Int($0) } }
        return Usage(inputTokens: int("inputTokens"), outputTokens: int("outputTokens"),
                     reasoningTokens: int("reasoningOutputTokens"), cacheReadTokens: int("cachedInputTokens"),
                     contextWindow: tokenUsage["modelContextWindow"]?.int.map { Int($0) })
    }

    private mutating func mapError(session: String?, turn: String?, params p: JSONValue) -> [Event] {
        let message = p["error"]?["message"]?.string ?? p["error"]?.string ?? p["message"]?.string ?? "unknown error"
        // willRetry: Codex retries by itself and the turn goes on; false: the turn is failing.
        let willRetry = p["willRetry"]?.bool ?? p["will_retry"]?.bool ?? false
        var event = Event.error(TetherError(.failed, "Codex: \(message)", retryable: willRetry), session: session, turn: turn)
        if let info = p["error"]?["codexErrorInfo"], !info.isNull { event.data["codex_error_info"] = info }
        if let details = p["error"]?["additionalDetails"]?.string { event.data["details"] = .string(details) }
        var events = [event]
        if let session {
            if willRetry {
                events += setStatus(session, .retrying, message: message)
            } else if let turn {
                openTurns[Self.key(session, turn)]?.error = message
            }
        }
        return events
    }

    // MARK: - Approvals

    private mutating func mapRequest(scope: String?, id: JSONValue, method: String, params p: JSONValue) -> [Event] {
        guard let kind = CodexApprovalID.Kind(method: method), let thread = Self.string(p, "threadId", "thread_id") else {
            return []
        }
        let turn = Self.string(p, "turnId", "turn_id")
        let item = Self.string(p, "itemId", "item_id")
        let approvalID = CodexApprovalID(scope: scope, thread: thread, request: id, kind: kind, turn: turn, item: item)
        let session = approvalID.session
        let dedup = [scope ?? "", CodexApprovalID.token(for: id), item ?? ""].joined(separator: "\u{1F}")
        guard pendingApprovals[approvalID.string] == nil, seenRequests.insert(dedup) else { return [] }
        // A request for an item already completed is stale (delivered late): nothing to answer.
        if let item, completedParts.contains(Self.key(session, item)) { return [] }

        let approval = makeApproval(approvalID, session: session, turn: turn, item: item, params: p)
        var events = turn.map { ensureTurn(session: session, turn: $0) } ?? []
        pendingApprovals[approval.id] = PendingApproval(approval: approval, id: approvalID, item: item, turn: turn)
        events.append(.approvalRequested(approval))
        events += setStatus(session, .waitingApproval)
        return events
    }

    private func makeApproval(_ approvalID: CodexApprovalID, session: String, turn: String?, item: String?,
                              params p: JSONValue) -> Approval {
        var extra: JSONObject = ["request_id": approvalID.request]
        if let scope = approvalID.scope { extra["workspace"] = .string(scope) }
        if let item { extra["item"] = .string(item) }
        let offered = p["availableDecisions"]?.array.map { list in
            list.compactMap(CodexDecision.decision(fromWire:)).reduce(into: [Decision]()) { if !$0.contains($1) { $0.append($1) } }
        }
        let reason = p["reason"]?.string
        switch approvalID.kind {
        case .command:
            let command = p["command"]?.string ?? p["command"]?.array?.compactMap(\.string).joined(separator: " ")
            if let amendment = p["proposedExecpolicyAmendment"]?.array, !amendment.isEmpty { extra["proposed_amendment"] = .array(amendment) }
            if let network = p["networkApprovalContext"], !network.isNull { extra["network"] = network }
            return Approval(id: approvalID.string, session: session, turn: turn, kind: .command,
                            title: "Run \(command ?? "a command")", command: command, cwd: p["cwd"]?.string, reason: reason,
                            options: offered.map(Self.commandOptions) ?? Decision.allCases, risk: CodexThreadItem.risk(command: command),
                            extra: extra)
        case .fileChange:
            let snapshot = item.flatMap { openParts[Self.key(session, $0)]?.item }
            let changes = (snapshot?["changes"]?.array ?? p["changes"]?.array ?? []).map(CodexThreadItem.change)
            if let grantRoot = p["grantRoot"], !grantRoot.isNull { extra["grant_root"] = grantRoot }
            let fileChangeOptions: [Decision] = [.accept, .acceptForSession, .decline, .cancel]
            return Approval(id: approvalID.string, session: session, turn: turn, kind: .fileChange,
                            title: changes.count == 1 ? "Change \(changes[0]["path"]?.string ?? "a file")"
                                : changes.isEmpty ? "Apply file changes" : "Change \(changes.count) files",
                            reason: reason, changes: changes,
                            options: (offered ?? fileChangeOptions).filter(fileChangeOptions.contains), risk: .medium, extra: extra)
        case .permissions:
            if let permissions = p["permissions"] { extra["permissions"] = permissions }
            return Approval(id: approvalID.string, session: session, turn: turn, kind: .permission, title: "Grant permissions",
                            reason: reason, options: [], risk: .medium, extra: extra)
        case .userInput:
            let questions = (p["questions"]?.array ?? []).map(CodexDecision.question)
            if !questions.isEmpty { extra["questions"] = .array(questions) }
            let title = questions.first.flatMap { $0["question"]?.string ?? $0["header"]?.string } ?? "Codex asks a question"
            return Approval(id: approvalID.string, session: session, turn: turn, kind: .question, title: title,
                            reason: reason, options: answersQuestions ? [.accept, .decline] : [], risk: .low, extra: extra)
        }
    }

    /// A command request's options from its `availableDecisions`, plus the answers codex 0.163
    /// takes without listing them (`acceptForSession`, `decline`: observed to work).
    static func commandOptions(_ offered: [Decision]) -> [Decision] {
        let unlisted: [Decision] = [.accept, .acceptForSession, .decline, .cancel]
        return Decision.allCases.filter { offered.contains($0) || unlisted.contains($0) }
    }

    private mutating func resolve(_ pending: PendingApproval, decision: String) -> [Event] {
        pendingApprovals[pending.approval.id] = nil
        var events: [Event] = [.approvalResolved(id: pending.approval.id, session: pending.approval.session, turn: pending.turn,
                                                 decision: decision)]
        if let session = pending.approval.session, !pendingApprovals.values.contains(where: { $0.approval.session == session }),
           openTurns.values.contains(where: { $0.session == session }) {
            events += setStatus(session, .busy)
        }
        return events
    }

    // MARK: - Helpers

    private mutating func setStatus(_ session: String, _ status: SessionStatus, message: String? = nil) -> [Event] {
        guard statuses[session] != status || status == .retrying else { return [] }
        statuses[session] = status
        return [.sessionStatus(session, status, message: message)]
    }

    public static func key(_ session: String, _ id: String) -> HashedKey { HashedKey(session + "\u{1F}" + id) }

    /// The first of `keys` that holds a string: CodexMonitor's clients read both spellings.
    public static func string(_ value: JSONValue, _ keys: String...) -> String? {
        for key in keys { if let text = value[key]?.string { return text } }
        return nil
    }

    public static func planStatus(_ status: String?) -> String? {
        switch status {
        case "inProgress", "in_progress": return "in_progress"
        case let other: return other
        }
    }
}

// MARK: - Re-reading threads

extension CodexAppServerMapper {
    /// What a thread re-read with `resume_thread` (`{id, status, turns:[{id, status, error,
    /// items}]}`) says that the stream did not: the daemon never replays and drops events for
    /// slow clients, so this runs after every (re)connect. For a session we have not followed it
    /// starts at the running turn (no history replay); otherwise at the first turn we have open,
    /// or after the last we know. Everything already emitted is dropped.
    public mutating func reconcile(scope: String?, thread: JSONValue) -> [Event] {
        guard let threadID = thread["id"]?.string else { return [] }
        let session = CodexSessionID.make(scope: scope, thread: threadID)
        let turns = thread["turns"]?.array ?? []
        let ids = turns.map { $0["id"]?.string ?? "" }
        let running = turns.firstIndex { CodexThreadItem.outcome(ofTurnStatus: $0["status"]?.string) == nil } ?? turns.count
        var start = running
        if knownSessions.contains(session) {
            let known = ids.indices.filter { openTurns[Self.key(session, ids[$0])] != nil || finishedTurns.contains(Self.key(session, ids[$0])) }
            let firstOpen = ids.indices.first { openTurns[Self.key(session, ids[$0])] != nil }
            if let last = known.last { start = Swift.min(firstOpen ?? last + 1, last + 1) }
        }
        knownSessions.insert(session)

        var events: [Event] = []
        for (index, turn) in turns.enumerated() where index >= start {
            let id = ids[index]
            guard !id.isEmpty, !finishedTurns.contains(Self.key(session, id)) else { continue }
            let followed = openTurns[Self.key(session, id)] != nil
            events += ensureTurn(session: session, turn: id)
            let items = turn["items"]?.array ?? []
            let inProgress = CodexThreadItem.outcome(ofTurnStatus: turn["status"]?.string) == nil
            for (position, item) in items.enumerated() {
                // A running turn read back names its prompt `item-1` (not the id it streamed
                // under): for a turn we followed, that prompt is already out.
                if followed, inProgress, Self.isSyntheticPrompt(item) { continue }
                // In a running turn the last message may still be streaming: start it, and let
                // its item/completed (or the turn's end) complete it.
                if Self.isSettled(item, last: position == items.count - 1, turnInProgress: inProgress) {
                    events += completeItem(session: session, turn: id, item: item)
                } else {
                    events += startItem(session: session, turn: id, item: item)
                }
            }
            if !inProgress {
                var finished = turn
                if case .object(var object) = turn {
                    object["items"] = []  // already applied above
                    finished = .object(object)
                }
                events += completeTurn(session: session, turn: finished)
            }
        }
        if let status = CodexThread.status(thread["status"]) {
            let busy = openTurns.values.contains { $0.session == session }
            // A re-read never turns a running session idle while we hold its turn open.
            if !(status == .idle && busy) { events += setStatus(session, status) }
        }
        return events
    }

    /// A `userMessage` under the synthetic id (`item-N`) Codex gives the prompt of a running
    /// turn when a thread is resumed (codex 0.163).
    static func isSyntheticPrompt(_ item: JSONValue) -> Bool {
        guard item["type"]?.string == "userMessage", let id = item["id"]?.string, id.hasPrefix("item-") else { return false }
        return !id.dropFirst(5).isEmpty && id.dropFirst(5).allSatisfy(\.isNumber)
    }

    private static func isSettled(_ item: JSONValue, last: Bool, turnInProgress: Bool) -> Bool {
        if let status = item["status"]?.string {
            return ["completed", "failed", "declined"].contains(status)
        }
        return !(turnInProgress && last)
    }

    /// A thread's past turns (from `resume_thread`) as events: `turn.started`, `part.completed`
    /// for each item, and `turn.completed` for turns that ended. `limit` keeps the last turns.
    public static func history(scope: String?, thread: JSONValue, limit: Int?) -> [Event] {
        guard let threadID = thread["id"]?.string else { return [] }
        let session = CodexSessionID.make(scope: scope, thread: threadID)
        var turns = thread["turns"]?.array ?? []
        if let limit { turns = Array(turns.suffix(Swift.max(0, limit))) }
        var mapper = CodexAppServerMapper()
        var events: [Event] = []
        for turn in turns {
            guard let id = turn["id"]?.string else { continue }
            events += mapper.ensureTurn(session: session, turn: id)
            for item in turn["items"]?.array ?? [] {
                events += mapper.completeItem(session: session, turn: id, item: item)
            }
            if CodexThreadItem.outcome(ofTurnStatus: turn["status"]?.string) != nil, case .object(var object) = turn {
                object["items"] = []
                events += mapper.completeTurn(session: session, turn: .object(object))
            }
        }
        return events.filter { $0.type != .sessionStatus }
    }
}
