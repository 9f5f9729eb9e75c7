import Foundation
import Logging

/// Everything the simulated OpenCode server knows, on one actor so that what SSE emits and what
/// REST serves never disagree: every event goes through `emit`, which first applies it to the REST
/// projection (sessions, messages, parts, statuses, pending requests) and then fans it out.
actor OpenCodeState {
    let options: OpenCodeSimulator.Options
    let ids = OpenCodeIDs()
    let logger: Logger

    // MARK: REST projection (see OpenCodeState+Projection.swift)

    /// Sessions in creation order.
    var sessions: [String: OrderedJSON] = [:]
    var sessionOrder: [String] = []
    /// Messages per session, in creation order, each with its latest part snapshots.
    var messages: [String: [MessageRecord]] = [:]
    /// Non-idle statuses only, like `GET /session/status`.
    var statuses: [String: OrderedJSON] = [:]
    var pendingPermissions: [PendingRequest] = []
    var pendingQuestions: [PendingRequest] = []
    var todos: [String: OrderedJSON] = [:]
    /// Text accumulated from `message.part.delta`: never served (deltas are live-only), but an
    /// abort finalizes a streaming part with it.
    var liveText: [String: String] = [:]

    struct MessageRecord: Sendable {
        var info: OrderedJSON
        var parts: [OrderedJSON] = []
        var id: String { info["id"]?.stringValue ?? "" }
    }

    struct PendingRequest: Sendable {
        var id: String
        var sessionID: String
        var json: OrderedJSON
    }

    // MARK: Live state

    var subscribers: [Int: OpenCodeEventSubscriber] = [:]
    var nextSubscriberID = 0
    var turns: [String: OpenCodeTurn] = [:]
    /// Prompts taken while a turn runs, with their user messages (already stored and emitted).
    var queuedPrompts: [String: [QueuedPrompt]] = [:]
    /// `always` replies: patterns allowed per directory (project).
    var allowedPatterns: [String: Set<String>] = [:]
    /// The session, message and part that `Options.flood` deltas target.
    var floodTarget: (sessionID: String, messageID: String, partID: String)?
    /// `Options.floodShape`: the whole flood (deltas and the closing idle frames), rendered once.
    var floodBytes: Data?

    init(options: OpenCodeSimulator.Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    // MARK: Emitting

    /// Publishes one bus event: applies it to the REST projection, then sends it to every stream.
    func emit(_ type: String, _ properties: OrderedJSON, directory: String?) {
        var payload: OrderedJSON = options.legacy ? [:] : ["id": .string(ids.event())]
        payload["type"] = .string(type)
        payload["properties"] = properties
        apply(type, properties)
        let event = OpenCodeBusEvent(type: type, payload: payload, directory: directory)
        for (id, subscriber) in subscribers where !subscriber.deliver(event) {
            subscribers[id] = nil
        }
        logger.trace("emit", metadata: ["type": "\(type)", "directory": "\(directory ?? "-")"])
    }

    /// A server-generated payload (`server.connected`, `server.heartbeat`), with an `id` unless legacy.
    nonisolated func serverPayload(_ type: String) -> OrderedJSON {
        var payload: OrderedJSON = options.legacy ? [:] : ["id": .string(ids.event())]
        payload["type"] = .string(type)
        payload["properties"] = [:]
        return payload
    }

    // MARK: Streams

    /// Registers an SSE response: `server.connected` first, then heartbeats and (global) bus events.
    func subscribe(_ endpoint: OpenCodeEventSubscriber.Endpoint, body: StreamingBody) {
        let id = nextSubscriberID
        nextSubscriberID += 1
        let subscriber = OpenCodeEventSubscriber(
            endpoint: endpoint, body: body, heartbeatsOnly: options.faults.heartbeatsOnly
        )
        subscriber.deliverServerEvent(serverPayload("server.connected"))
        subscribers[id] = subscriber

        let interval = options.heartbeatInterval
        let heartbeat = Task { [weak self] in
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                guard let payload = self?.serverPayload("server.heartbeat"),
                      subscriber.deliverServerEvent(payload) else { return }
            }
        }
        let flood: Task<Void, Never>?
        if endpoint == .global, let bytes = floodBytes, !options.faults.heartbeatsOnly {
            let close = options.floodClose
            flood = Task {
                await SSEResponse.write(bytes, into: body, close: close)
            }
        } else if endpoint == .global, let count = options.flood, !options.faults.heartbeatsOnly, let target = floodTarget {
            flood = Task { [weak self] in
                await self?.flood(count, target: target, into: body)
            }
        } else {
            flood = nil
        }
        body.onTermination { [weak self] in
            heartbeat.cancel()
            flood?.cancel()
            Task { await self?.unsubscribe(id) }
        }
    }

    func unsubscribe(_ id: Int) {
        subscribers[id] = nil
    }

    var openStreamCount: Int {
        subscribers.values.filter { $0.body.isOpen }.count
    }

    /// Fault injection: every open SSE connection is cut mid-body.
    func dropAllStreams() {
        logger.debug("dropping every SSE stream", metadata: ["count": "\(subscribers.count)"])
        for subscriber in subscribers.values {
            subscriber.body.abort()
        }
        subscribers.removeAll()
    }

    /// `server.instance.disposed` for `directory`: `/event` streams of it end after forwarding it.
    func disposeInstance(_ directory: String) {
        emit("server.instance.disposed", ["directory": .string(directory)], directory: directory)
    }

    /// `Options.flood` with `floodRate`: deltas for the flood session, paced, then idle. Per
    /// connection, not broadcast. (Unpaced floods are pre-rendered: `renderFlood`.)
    nonisolated private func flood(
        _ count: Int, target: (sessionID: String, messageID: String, partID: String), into body: StreamingBody
    ) async {
        let directory = options.directory
        func frame(_ type: String, _ properties: OrderedJSON) -> Data {
            let payload: OrderedJSON = ["id": .string(ids.event()), "type": .string(type), "properties": properties]
            return SSEResponse.dataFrame(
                OpenCodeEventSubscriber.envelope(OpenCodeBusEvent(type: type, payload: payload, directory: directory))
            )
        }
        var turn = target
        func delta(_ text: String) -> Data {
            frame("message.part.delta", [
                "sessionID": .string(turn.sessionID),
                "messageID": .string(turn.messageID),
                "partID": .string(turn.partID),
                "field": "text",
                "delta": .string(text),
            ])
        }
        // `floodTurns`: each turn in a new session (see Options.floodTurns).
        let turnLength = options.floodTurns.map { max(1, $0) }
        func openTurn(_ batch: inout Data) {
            let session = ids.descending("ses"), user = ids.ascending("msg")
            turn = (session, ids.ascending("msg"), ids.ascending("prt"))
            let now = epochMilliseconds()
            batch.append(frame("message.updated", ["info": [
                "id": .string(user), "sessionID": .string(session), "role": "user", "time": ["created": .int(now)],
            ]]))
            batch.append(frame("session.status", ["sessionID": .string(session), "status": ["type": "busy"]]))
            batch.append(frame("message.updated", ["info": [
                "id": .string(turn.messageID), "sessionID": .string(session), "role": "assistant",
                "parentID": .string(user), "time": ["created": .int(now)],
            ]]))
        }
        func closeTurn(_ batch: inout Data, lastText: String) {
            var part = OpenCodeFixtures.part(id: turn.partID, sessionID: turn.sessionID, messageID: turn.messageID, type: "text")
            part["text"] = .string(lastText)
            part["time"] = ["start": .int(epochMilliseconds()), "end": .int(epochMilliseconds())]
            batch.append(frame("message.part.updated", ["part": part]))
            batch.append(frame("session.idle", ["sessionID": .string(turn.sessionID)]))
        }
        var batch = Data()
        // The deltas that are due go out together, each stamped as it is written.
        let schedule = PacedSchedule(rate: options.floodRate ?? 1)
        var i = 0
        while i < count {
            guard await schedule.wait(for: i) else { return }
            batch.removeAll(keepingCapacity: true)
            for _ in 0..<schedule.dueCount(from: i, limit: min(256, count - i)) {
                if let turnLength, i % turnLength == 0 { openTurn(&batch) }
                let text = "token\(i) sent_ns=\(PacedSchedule.wallClockNanoseconds()) "
                batch.append(delta(text))
                if let turnLength, i % turnLength == turnLength - 1 || i == count - 1 { closeTurn(&batch, lastText: text) }
                i += 1
            }
            guard await body.write(batch) else { return }
        }
        if turnLength != nil {
            if options.floodClose { body.finish() }
            return
        }
        batch.removeAll(keepingCapacity: true)
        batch.append(frame("session.status", ["sessionID": .string(target.sessionID), "status": ["type": "idle"]]))
        batch.append(frame("session.idle", ["sessionID": .string(target.sessionID)]))
        guard await body.write(batch) else { return }
        if options.floodClose { body.finish() }
    }

    /// An unpaced `Options.flood`, whole: with a shape, every delta as a legacy
    /// `message.part.updated {part, delta}` of the flood message, parts opened as the shape says;
    /// without, `message.part.delta`s of the flood part. Then `session.status` idle and `session.idle`.
    private func renderFlood(_ count: Int, shape: FloodShape?,
                             target: (sessionID: String, messageID: String, partID: String)) -> Data {
        let directory = options.directory
        let legacy = options.legacy
        let started = epochMilliseconds()
        func frame(_ type: String, _ properties: OrderedJSON, id: String) -> Data {
            var payload: OrderedJSON = legacy ? [:] : ["id": .string(id)]
            payload["type"] = .string(type)
            payload["properties"] = properties
            return SSEResponse.dataFrame(
                OpenCodeEventSubscriber.envelope(OpenCodeBusEvent(type: type, payload: payload, directory: directory))
            )
        }
        // Fields: 0 the event id, 1 the part id, 2 the piece of text.
        let template = FloodTemplate(fieldCount: 3) { field in
            guard shape != nil else {
                return frame("message.part.delta", [
                    "sessionID": .string(target.sessionID), "messageID": .string(target.messageID),
                    "partID": .string(field[1]), "field": "text", "delta": .string(field[2]),
                ], id: field[0])
            }
            var part = OpenCodeFixtures.part(id: field[1], sessionID: target.sessionID, messageID: target.messageID, type: "text")
            part["text"] = .string(field[2])
            part["time"] = ["start": .int(started)]
            return frame("message.part.updated", ["part": part, "delta": .string(field[2])], id: field[0])
        }
        let eventIDs = ids.ascendingSeries("evt", count: count + 2)
        let partIDs = shape.map { ids.ascendingSeries("prt", count: $0.part(ofDelta: max(0, count - 1)) + 1) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 320)
        var part = target.partID
        for index in 0..<count {
            if let shape, let partIDs, shape.opensPart(index) { part = partIDs(shape.part(ofDelta: index)) }
            template.append([legacy ? "" : eventIDs(index), part, "token\(index) "], to: &bytes)
        }
        var data = Data(bytes)
        data.append(frame("session.status", ["sessionID": .string(target.sessionID), "status": ["type": "idle"]], id: eventIDs(count)))
        data.append(frame("session.idle", ["sessionID": .string(target.sessionID)], id: eventIDs(count + 1)))
        return data
    }

    // MARK: Seeding

    func seed() {
        let now = epochMilliseconds()
        if options.seedFixtureSession {
            let created = now - 3_600_000
            let session = OpenCodeFixtures.session(
                id: OpenCodeFixtures.fixtureSessionID, slug: "brave-otter", directory: options.directory,
                title: "Fix the build", version: serverVersion, created: created, updated: created + 60_000
            )
            apply("session.created", ["sessionID": .string(OpenCodeFixtures.fixtureSessionID), "info": session])
        }
        if options.flood != nil {
            let sessionID = ids.descending("ses")
            let session = OpenCodeFixtures.session(
                id: sessionID, slug: "swift-falcon", directory: options.directory,
                title: "Flood", version: serverVersion, created: now, updated: now
            )
            apply("session.created", ["sessionID": .string(sessionID), "info": session])
            let prompt = OpenCodePrompt(text: "Stream as much as you can")
            let user = OpenCodeFixtures.userMessage(id: ids.ascending("msg"), sessionID: sessionID, created: now, prompt: prompt)
            let userID = user["id"]?.stringValue ?? ""
            let assistant = OpenCodeFixtures.assistantMessage(
                id: ids.ascending("msg"), sessionID: sessionID, parentID: userID,
                created: now, prompt: prompt, directory: options.directory
            )
            let messageID = assistant["id"]?.stringValue ?? ""
            var part = OpenCodeFixtures.part(id: ids.ascending("prt"), sessionID: sessionID, messageID: messageID, type: "text")
            part["text"] = ""
            part["time"] = ["start": .int(now)]
            apply("message.updated", ["sessionID": .string(sessionID), "info": user])
            apply("message.updated", ["sessionID": .string(sessionID), "info": assistant])
            apply("message.part.updated", ["sessionID": .string(sessionID), "part": part])
            floodTarget = (sessionID, messageID, part["id"]?.stringValue ?? "")
            if let count = options.flood, options.floodRate == nil, let target = floodTarget {
                floodBytes = renderFlood(count, shape: options.floodShape, target: target)
            }
        }
    }

    /// The version sessions carry: the health version without a `-fake` suffix.
    var serverVersion: String {
        options.version.replacingOccurrences(of: "-fake", with: "")
    }

    /// Ends every stream and turn (server stopping).
    func shutdown() {
        for turn in turns.values { turn.task?.cancel() }
        turns.removeAll()
        queuedPrompts.removeAll()
        for subscriber in subscribers.values { subscriber.body.abort() }
        subscribers.removeAll()
    }
}
