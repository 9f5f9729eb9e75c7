import Foundation

/// `thread/*`: threads live in the process-wide world; `thread/start` and `thread/resume`
/// subscribe the caller (note §3).
extension CodexAppServerSimulator {
    typealias Wire = CodexAppServerWire

    static let defaultModel = "gpt-5-codex"

    /// A well-formed id, or `invalid thread id`.
    static func threadID(_ params: JSON) throws -> String {
        let id = try params.requiredString("threadId")
        guard CodexAppServerIDs.isUUID(id) else { throw CodexAppServerRPCError.invalidThreadID(id) }
        return id
    }

    static func sandbox(_ params: JSON) throws -> JSON? {
        guard let value = params["sandbox"], value != .null else { return nil }
        guard let mode = value.stringValue else { throw CodexAppServerRPCError.invalidType("sandbox", expected: "a string") }
        guard let sandbox = Shapes.sandbox(mode) else {
            throw CodexAppServerRPCError(
                "Invalid request: unknown variant `\(mode)`, expected one of `read-only`, `workspace-write`, `danger-full-access`")
        }
        return sandbox
    }

    /// Per-thread settings a request may override (they stick).
    static func applyOverrides(_ params: JSON, to record: inout ThreadRecord) throws {
        if let sandbox = try sandbox(params) { record.sandbox = sandbox }
        if let policy = params["approvalPolicy"], policy != .null { record.approvalPolicy = policy }
        if let cwd = params.optionalString("cwd") { record.cwd = cwd }
        if let model = params.optionalString("model") { record.model = model }
    }

    func threadJSON(_ record: ThreadRecord, _ state: State, turns: [JSON] = [], listed: Bool = false) -> JSON {
        Shapes.thread(record, status: state.status(of: record.id), codexHome: options.codexHome, turns: turns, listed: listed)
    }

    // MARK: - thread/start, thread/fork

    func threadStart(id: JSON, params: JSON, from connection: Int) throws {
        let now = Wire.nowSeconds
        var record = ThreadRecord(
            id: CodexAppServerIDs.uuidV7(), cwd: FileManager.default.currentDirectoryPath, createdAt: now, updatedAt: now,
            originator: "", approvalPolicy: "on-request", sandbox: Shapes.sandbox(nil)!, model: Self.defaultModel)
        try Self.applyOverrides(params, to: &record)
        state.withLock { state in
            record.originator = state.originator ?? "tether-sim"
            state.threads[record.id] = record
            state.threadOrder.append(record.id)
            state.connections[connection]?.subscriptions.insert(record.id)
            let thread = threadJSON(record, state)
            state.send(Wire.result(id: id, Shapes.threadResponse(record, thread: thread)), to: connection)
            state.broadcast(Wire.notification("thread/started", ["thread": thread]))
        }
    }

    func threadFork(id: JSON, params: JSON, from connection: Int) throws {
        let sourceID = try Self.threadID(params)
        try state.withLock { state in
            guard let source = state.threads[sourceID], source.hasRollout else { throw CodexAppServerRPCError.noRollout(sourceID) }
            let now = Wire.nowSeconds
            var record = source
            record.id = CodexAppServerIDs.uuidV7()
            record.forkedFromId = source.id
            record.createdAt = now
            record.updatedAt = now
            record.archived = false
            record.loaded = true
            record.active = nil
            record.activeFlags = []
            record.name = nil
            record.turns = source.turns.filter { $0.status != "inProgress" }
            try Self.applyOverrides(params, to: &record)
            state.threads[record.id] = record
            state.threadOrder.append(record.id)
            state.connections[connection]?.subscriptions.insert(record.id)
            let thread = threadJSON(record, state)
            state.send(Wire.result(id: id, Shapes.threadResponse(record, thread: thread)), to: connection)
            state.broadcast(Wire.notification("thread/started", ["thread": thread]))
        }
    }

    // MARK: - thread/resume

    /// Subscribes, loads, answers with the thread (and its turns unless `excludeTurns`), then
    /// sends the last token usage (with turns only), `thread/goal/cleared`, and every pending
    /// server request of the thread again, same id, to this connection (note §3, §7.3).
    func threadResume(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let excludeTurns = params.flag("excludeTurns")
        try state.withLock { state in
            guard var record = state.threads[threadID], record.hasRollout, !record.archived else {
                throw CodexAppServerRPCError.noRollout(threadID)
            }
            try Self.applyOverrides(params, to: &record)
            let wasLoaded = record.loaded
            record.loaded = true
            state.threads[threadID] = record
            state.connections[connection]?.subscriptions.insert(threadID)
            if !wasLoaded { state.broadcastStatus(of: threadID) }
            if !excludeTurns {
                state.send(Wire.notification("deprecationNotice", [
                    "summary": "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`.",
                    "details": .null,
                ]), to: connection)
            }
            let turns = excludeTurns ? [] : record.turns.map { Shapes.historyTurn($0, itemsView: "full", snapshot: true) }
            var initialPage: JSON = .null
            if let request = params["initialTurnsPage"], request.objectMembers != nil {
                initialPage = turnsPage(record, params: request).page
            }
            let ordinal = record.turns.reduce(0) { $0 + $1.items.count + 2 }
            state.send(Wire.result(id: id, Shapes.threadResponse(record, thread: threadJSON(record, state, turns: turns), extra: [
                .init(key: "initialTurnsPage", value: initialPage),
                .init(key: "turnsBackwardsCursor", value: Shapes.backwardsCursor(threadID: threadID, ordinal: 1, scope: "turns")),
                .init(key: "itemsBackwardsCursor", value: Shapes.backwardsCursor(threadID: threadID, ordinal: ordinal, scope: "itemsByCreatedAtOrdinal")),
            ])), to: connection)
            if !excludeTurns, record.totalInput > 0, let last = record.turns.last {
                state.send(Wire.notification("thread/tokenUsage/updated", Shapes.tokenUsage(
                    threadID: threadID, turnID: last.id, totalInput: record.totalInput, totalOutput: record.totalOutput
                )), to: connection)
            }
            state.emit(Wire.notification("thread/goal/cleared", ["threadId": .string(threadID)]), thread: threadID)
            for pending in state.pending.values.filter({ $0.threadID == threadID }).sorted(by: { $0.id < $1.id }) {
                state.send(pending.message, to: connection)
            }
        }
        if threadID == Self.floodThreadID, options.flood != nil { flood(to: connection) }
    }

    // MARK: - thread/unsubscribe, thread/archive, thread/unarchive, thread/name/set

    func threadUnsubscribe(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        state.withLock { state in
            let status: String
            if state.threads[threadID]?.loaded != true || state.threads[threadID]?.archived == true {
                status = "notLoaded"
            } else if state.connections[connection]?.subscriptions.remove(threadID) != nil {
                status = "unsubscribed"
            } else {
                status = "notSubscribed"
            }
            state.send(Wire.result(id: id, ["status": .string(status)]), to: connection)
        }
    }

    /// Archiving unloads the thread: `thread/status/changed` notLoaded (twice, as observed),
    /// `{}`, `thread/archived`.
    func threadArchive(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let running = try state.withLock { state -> CodexAppServerTurn? in
            guard let record = state.threads[threadID], record.hasRollout else { throw CodexAppServerRPCError.noRollout(threadID) }
            let running = record.active
            state.threads[threadID]?.archived = true
            state.threads[threadID]?.loaded = false
            state.threads[threadID]?.active = nil
            state.threads[threadID]?.activeFlags = []
            if let index = record.turns.lastIndex(where: { $0.status == "inProgress" }) {
                state.threads[threadID]?.turns[index].status = "interrupted"
                state.threads[threadID]?.turns[index].completedAtMs = Wire.nowMs
            }
            state.pending = state.pending.filter { $0.value.threadID != threadID }
            for key in state.connections.keys { state.connections[key]?.subscriptions.remove(threadID) }
            state.broadcastStatus(of: threadID)
            state.broadcastStatus(of: threadID)
            state.send(Wire.result(id: id, [:]), to: connection)
            state.broadcast(Wire.notification("thread/archived", ["threadId": .string(threadID)]))
            return running
        }
        running?.interrupt()
    }

    func threadUnarchive(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        try state.withLock { state in
            guard var record = state.threads[threadID] else { throw CodexAppServerRPCError.noRollout(threadID) }
            record.archived = false
            record.updatedAt = Wire.nowSeconds
            state.threads[threadID] = record
            state.send(Wire.result(id: id, ["thread": threadJSON(record, state)]), to: connection)
            state.broadcast(Wire.notification("thread/unarchived", ["threadId": .string(threadID)]))
        }
    }

    func threadNameSet(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let name = try params.requiredString("name")
        try state.withLock { state in
            guard state.threads[threadID] != nil else { throw CodexAppServerRPCError.threadNotFound(threadID) }
            state.threads[threadID]?.name = name
            state.send(Wire.result(id: id, [:]), to: connection)
            state.broadcast(Wire.notification("thread/name/updated", ["threadId": .string(threadID), "threadName": .string(name)]))
        }
    }
}
