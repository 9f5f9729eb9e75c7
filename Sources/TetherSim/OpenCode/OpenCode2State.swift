import Foundation
import Logging

/// Everything the simulated OpenCode 2.x server (`@opencode/cli`, `opencode serve`) knows, on one
/// actor (protocols/opencode-v2.md). Written from the note, not from the adapter: every event
/// goes through `emit`, which stamps the envelope (`{id, created, type, location?, durable?,
/// data}`), appends a durable one to its session's log with the next `seq`, and fans it out to
/// the global `/api/event` streams and to the log's followers. The REST projection (sessions,
/// the message union, pending permissions and forms) is kept by the scripts beside the events
/// they emit (`OpenCode2State+Script.swift`), so what a stream said and what REST serves agree.
actor OpenCode2State {
    let options: OpenCodeSimulator.Options
    let ids = OpenCodeIDs()
    let logger: Logger

    // MARK: REST projection

    var sessions: [String: OrderedJSON] = [:]
    var sessionOrder: [String] = []
    /// The message union per session, oldest first (`user`, `assistant`, `idle`, …).
    var messages: [String: [OrderedJSON]] = [:]
    /// Pending `Permission.Request`s and `Form.Info`s, oldest first.
    var permissions: [OrderedJSON] = []
    var forms: [OrderedJSON] = []

    // MARK: The durable log (§4.3, §4.4)

    /// Durable events per session, in order: event `n` has `durable.seq` n + 1.
    var logs: [String: [OrderedJSON]] = [:]

    // MARK: Live state

    var globalStreams: [Int: StreamingBody] = [:]
    var logFollowers: [Int: (session: String, body: StreamingBody)] = [:]
    var nextStreamID = 0
    var turns: [String: OpenCode2Turn] = [:]
    /// `Options.flood`: what every `/api/event` connection is sent after `server.connected`.
    var floodBytes: Data?
    /// Inputs admitted while a turn runs (`delivery: queue`), promoted when it ends.
    var inbox: [String: [OpenCode2Input]] = [:]

    init(options: OpenCodeSimulator.Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    // MARK: Emitting

    /// Live-only kinds (§4.3): every delta, tool progress, usage, status, and `permission.*` /
    /// `form.*`. Everything else a session publishes is durable.
    static func isDurable(_ type: String) -> Bool {
        if type.hasSuffix(".delta") || type.hasPrefix("permission.") || type.hasPrefix("form.") || type.hasPrefix("server.") {
            return false
        }
        return !["session.tool.progress", "session.usage.updated", "session.status", "session.idle"].contains(type)
    }

    /// Publishes one event of `sessionID`.
    func emit(_ type: String, _ data: OrderedJSON, session sessionID: String) {
        var event: OrderedJSON = ["id": .string(ids.event()), "created": .int(epochMilliseconds()), "type": .string(type)]
        if let directory = sessions[sessionID]?["location"]?["directory"] {
            event["location"] = ["directory": directory]
        }
        var data = data
        if data["sessionID"] == nil { data["sessionID"] = .string(sessionID) }
        if Self.isDurable(type) {
            let seq = (logs[sessionID]?.count ?? 0) + 1
            event["durable"] = ["aggregateID": .string(sessionID), "seq": .int(seq), "version": 1]
            event["data"] = data
            logs[sessionID, default: []].append(event)
            let frame = SSEResponse.dataFrame(event)
            for (id, follower) in logFollowers where follower.session == sessionID {
                if !follower.body.send(frame) { logFollowers[id] = nil }
            }
        } else {
            event["data"] = data
        }
        guard !options.faults.heartbeatsOnly else { return }
        let frame = SSEResponse.dataFrame(event)
        for (id, body) in globalStreams where !body.send(frame) {
            globalStreams[id] = nil
        }
        logger.trace("emit", metadata: ["type": "\(type)", "session": "\(sessionID)"])
    }

    // MARK: Streams

    /// `GET /api/event`: `server.connected` first (no `id:` line, no `event:` line), then every
    /// event of every session, with `: heartbeat` comments between.
    func subscribeGlobal(_ body: StreamingBody) {
        let id = nextStreamID
        nextStreamID += 1
        _ = body.send(SSEResponse.dataFrame(["id": .string(ids.event()), "type": "server.connected", "data": [:]]))
        if let floodBytes, !options.faults.heartbeatsOnly {
            // A flood connection carries the flood only: no heartbeat may land inside its frames.
            let close = options.floodClose
            let flood = Task { await SSEResponse.write(floodBytes, into: body, close: close) }
            body.onTermination { flood.cancel() }
            return
        }
        globalStreams[id] = body
        watch(body, id: id)
    }

    /// `GET /api/experimental/session/:id/log?after=SEQ&follow=`: the durable events after `after`
    /// (exclusive), then `log.synced` (its `seq` the last replayed, omitted when the log is
    /// empty); then, with `follow`, the session's durable events as they come; without, the end.
    func subscribeLog(_ body: StreamingBody, session: String, after: Int, follow: Bool) {
        let log = logs[session] ?? []
        for event in log.dropFirst(max(0, after)) {
            _ = body.send(SSEResponse.dataFrame(event))
        }
        var synced: OrderedJSON = ["type": "log.synced", "aggregateID": .string(session)]
        if !log.isEmpty { synced["seq"] = .int(log.count) }
        _ = body.send(SSEResponse.dataFrame(synced))
        guard follow else {
            body.finish()
            return
        }
        let id = nextStreamID
        nextStreamID += 1
        logFollowers[id] = (session, body)
        watch(body, id: id)
    }

    private func watch(_ body: StreamingBody, id: Int) {
        let interval = options.heartbeatInterval
        let heartbeat = Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                guard body.send(Data(": heartbeat\n\n".utf8)) else { return }
            }
        }
        body.onTermination { [weak self] in
            heartbeat.cancel()
            Task { await self?.unsubscribe(id) }
        }
    }

    func unsubscribe(_ id: Int) {
        globalStreams[id] = nil
        logFollowers[id] = nil
    }

    var openStreamCount: Int {
        globalStreams.values.filter(\.isOpen).count + logFollowers.values.filter(\.body.isOpen).count
    }

    /// Fault injection: every open SSE connection (global and log) is cut mid-body.
    func dropAllStreams() {
        for body in globalStreams.values { body.abort() }
        for follower in logFollowers.values { follower.body.abort() }
        globalStreams.removeAll()
        logFollowers.removeAll()
    }

    func shutdown() {
        for turn in turns.values { turn.task?.cancel() }
        turns.removeAll()
        inbox.removeAll()
        dropAllStreams()
    }

    // MARK: Sessions

    func seed() {
        if let flood = options.flood { seedFlood(flood) }
        guard options.seedFixtureSession else { return }
        let created = epochMilliseconds() - 3_600_000
        let id = OpenCodeFixtures.fixtureSessionID
        sessions[id] = sessionInfo(id: id, title: "Fix the build", directory: options.directory, created: created)
        sessionOrder.append(id)
        messages[id] = []
    }

    func sessionInfo(id: String, title: String, directory: String, created: Int, model: OrderedJSON? = nil) -> OrderedJSON {
        var info: OrderedJSON = [
            "id": .string(id), "projectID": .string(OpenCodeFixtures.projectID(for: directory)), "title": .string(title),
            "agent": "build",
            "cost": 0, "tokens": ["input": 0, "output": 0, "reasoning": 0, "cache": ["read": 0, "write": 0]],
            "time": ["created": .int(created), "updated": .int(created)],
            "location": ["directory": .string(directory)],
        ]
        if let model { info["model"] = model }
        return info
    }

    func createSession(title: String?, directory: String?, model: OrderedJSON?) -> OrderedJSON {
        let id = ids.descending("ses")
        let now = epochMilliseconds()
        let info = sessionInfo(id: id, title: title ?? "New session", directory: directory ?? options.directory,
                               created: now, model: model)
        sessions[id] = info
        sessionOrder.append(id)
        messages[id] = []
        emit("session.created", ["sessionID": .string(id), "info": info], session: id)
        return info
    }

    /// Newest first (by `time.updated`), optionally only one directory's.
    /// `offset` into that order: a page of `limit`, and whether more follow.
    func sessionList(directory: String?, limit: Int, offset: Int = 0) -> (page: [OrderedJSON], more: Bool) {
        let all = sessionOrder.compactMap { sessions[$0] }.filter { info in
            directory == nil || info["location"]?["directory"]?.stringValue == directory
        }
        let sorted = all.sorted { ($0["time"]?["updated"]?.intValue ?? 0) > ($1["time"]?["updated"]?.intValue ?? 0) }
        let page = Array(sorted.dropFirst(offset).prefix(limit))
        return (page, offset + page.count < sorted.count)
    }

    func deleteSession(_ id: String) async -> Bool {
        guard sessions[id] != nil else { return false }
        _ = await interrupt(id)
        emit("session.deleted", ["sessionID": .string(id)], session: id)
        sessions[id] = nil
        sessionOrder.removeAll { $0 == id }
        return true
    }

    /// `POST /api/session/:id/model`: the model later turns use (`session.model.selected`).
    func selectModel(_ id: String, model: OrderedJSON) -> OrderedJSON? {
        guard sessions[id] != nil else { return nil }
        sessions[id]?["model"] = model
        touch(id)
        emit("session.model.selected", ["sessionID": .string(id), "model": model], session: id)
        return sessions[id]
    }

    func touch(_ id: String) {
        sessions[id]?["time"]?["updated"] = .int(epochMilliseconds())
    }

    /// `GET /api/session/active`: running sessions only.
    var active: OrderedJSON {
        .object(turns.keys.sorted().map { .init(key: $0, value: ["type": "running"]) })
    }

    func isQuiet(_ sessionID: String) -> Bool {
        turns[sessionID] == nil && (inbox[sessionID] ?? []).isEmpty
    }

    // MARK: Messages

    func appendMessage(_ message: OrderedJSON, session: String) {
        messages[session, default: []].append(message)
        touch(session)
    }

    /// Replaces the stored message with the same id (an assistant message filling up).
    func updateMessage(_ id: String, session: String, _ change: (inout OrderedJSON) -> Void) {
        guard let index = messages[session]?.firstIndex(where: { $0["id"]?.stringValue == id }) else { return }
        change(&messages[session]![index])
    }

    func appendFinishedTurns(_ count: Int, session: String) {
        for index in 0..<count {
            let now = epochMilliseconds()
            appendMessage(["id": .string(ids.ascending("msg")), "type": "user", "text": .string("turn \(index)"),
                           "time": ["created": .int(now)]], session: session)
            appendMessage(["id": .string(ids.ascending("msg")), "type": "assistant", "agent": "build",
                           "model": ["providerID": "anthropic", "id": "claude-sonnet-4"],
                           "content": [["type": "text", "text": .string("reply \(index)")]], "finish": "stop",
                           "time": ["created": .int(now), "completed": .int(now)]], session: session)
            appendMessage(["id": .string(ids.ascending("msg")), "type": "idle", "outcome": "succeeded",
                           "time": ["created": .int(now)]], session: session)
        }
    }

    func message(_ id: String, session: String) -> OrderedJSON? {
        messages[session]?.first { $0["id"]?.stringValue == id }
    }
}

/// A prompt as `POST /api/session/:id/prompt` admitted it (`Session.Inbox.User`).
struct OpenCode2Input: Sendable {
    let id: String
    let text: String
    let created: Int
}
