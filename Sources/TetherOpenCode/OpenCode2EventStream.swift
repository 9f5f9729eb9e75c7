import Logging
import TetherCore
import TetherNet
import TetherAdapterSupport

/// The live side of the OpenCode 2.x backend, reduced to I/O: the global `GET /api/event`
/// subscription, the durable-log catch-ups and REST reads `OpenCode2StreamMachine` asks for, and
/// `send --follow`'s prompt. One task; the machine needs no lock.
struct OpenCode2EventStream: Sendable {
    let backend: OpenCodeBackend
    let request: EventsRequest
    let sendOnReady: SendRequest?

    private var client: OpenCode2Client { backend.client2 }
    private var logger: Logger { backend.logger }

    func run() -> EventStream {
        EventChannel.stream { channel in try await pump(channel) }
    }

    private func makeMachine() -> OpenCode2StreamMachine {
        OpenCode2StreamMachine(request: request, configuration: .init(
            endpoint: client.rest.configuration.baseURL, promptSession: sendOnReady?.session,
            since: request.since.flatMap { Int($0) }))
    }

    func pump(_ output: EventChannel) async throws {
        if let since = request.since {
            // A cursor is a `durable.seq`, and a seq orders one session's log only.
            guard request.session != nil else {
                throw TetherError(.usage, "--since takes an OpenCode 2 cursor (a session log's seq) and needs --session", hint: "tether events --session ID --since SEQ")
            }
            guard let seq = Int(since), seq >= 0 else {
                throw TetherError(.usage, "--since takes an OpenCode 2 cursor, a session log's seq (a number), got \(since)")
            }
        }
        var machine = makeMachine()
        let outbox = EventOutbox(channel: output)
        guard request.follow else {
            try await snapshot(&machine, outbox)
            try await outbox.flush()
            return
        }
        // A catch-up read or the prompt's POST can fail too (the server went away again): that
        // is a lost connection like any other. Reconnect on the same schedule; the next
        // `server.connected` resumes every active session from its log again.
        let subscription = OpenCodeSubscription(backend: backend, client: client.rest, output: output, outbox: outbox,
                                                restSteps: "a catch-up or the prompt's POST")
        try await subscription.run { retries in
            try await subscription.pump("/api/event", scoped: false, makeDecoder: { [raw = request.raw, logger] in
                { batch in batch.map { Self.decode($0, raw: raw, logger: logger) } }
            }, leaving: Decoded.unreadable, isDone: { machine.isDone }, feed: { element in
                switch element {
                case .wire(let wire):
                    let actions = machine.receive(wire)
                    retries.madeProgress()
                    try await execute(actions, &machine, outbox)
                case .textDelta(let delta):
                    let actions = machine.receive(delta)
                    retries.madeProgress()
                    try await execute(actions, &machine, outbox)
                case .unreadable:
                    break
                case .link(let link):
                    try await execute(machine.receive(link), &machine, outbox)
                }
            })
            return true
        }
    }

    /// One element of the subscription, decoded away from the machine's task.
    enum Decoded: Sendable {
        /// A change of the link (connecting, open, disconnected), or a comment.
        case link(EventSource.Element)
        case wire(OpenCode2WireEvent)
        /// A text or reasoning delta, read straight from its bytes (without `--raw`).
        case textDelta(OpenCode2TextDelta)
        /// A frame that could not be read (logged where it was decoded, and skipped).
        case unreadable
    }

    static func decode(_ element: EventSource.Element, raw: Bool, logger: Logger) -> Decoded {
        guard case .event(let sse) = element else { return .link(element) }
        if !raw, let delta = OpenCode2HotFrame.read(sse.dataBytes) { return .textDelta(delta) }
        do {
            return .wire(try OpenCode2WireDecoder.decode(sse.dataBytes, keepingRaw: raw))
        } catch {
            logger.warning("skipping an OpenCode 2 event that cannot be read",
                           metadata: ["error": "\(error)", "data": "\(sse.data.prefix(200))"])
            return .unreadable
        }
    }

    /// Without `--follow`: `--session` reads its durable log (after `--since`, else all of it);
    /// either way the pending permissions and forms of the sessions running now.
    private func snapshot(_ machine: inout OpenCode2StreamMachine, _ outbox: EventOutbox) async throws {
        if let session = request.session {
            try await execute([.catchUp([.init(session: session, after: request.since.flatMap { Int($0) } ?? 0)])], &machine, outbox)
            return
        }
        let active = (try await client.get("/session/active")).object?.keys.sorted() ?? []
        for session in active {
            try await execute([.catchUp([.init(session: session, after: Int.max / 2)])], &machine, outbox)
        }
    }

    private func execute(_ actions: [OpenCode2StreamMachine.Action], _ machine: inout OpenCode2StreamMachine,
                         _ outbox: EventOutbox) async throws {
        for action in actions {
            switch action {
            case .emit(let events):
                outbox.add(events)
            case .finish:
                return
            case .noteGeneration:
                logger.info("OpenCode server speaks the 2.x API: /api/event for every session, durable session logs to resume from",
                            metadata: ["api": "v2"])
            case .catchUp(let sessions):
                try await outbox.flush()
                for catchUp in sessions {
                    let frames = try await client.readLog(session: catchUp.session, after: catchUp.after)
                    var read: [OpenCode2WireEvent] = []
                    for frame in frames {
                        switch frame {
                        case .success(let wire): read.append(wire)
                        case .failure(let error):
                            logger.warning("skipping an OpenCode 2 log frame that cannot be read", metadata: ["error": "\(error)"])
                        }
                    }
                    logger.debug("caught up from the durable log", metadata: ["session": "\(catchUp.session)", "after": "\(catchUp.after)", "frames": "\(read.count)"])
                    let pending = try await backend.pending2(session: catchUp.session)
                    try await execute(machine.caughtUp(session: catchUp.session, frames: read, pending: pending), &machine, outbox)
                }
            case .joinRunning:
                try await outbox.flush()
                let running = (try await client.get("/session/active")).object?.keys.sorted() ?? []
                var created: [String] = []
                if let since = machine.createdWhileAway {
                    created = try await client.list("/session?limit=20", what: "the session list").compactMap { info in
                        guard let id = info["id"]?.string, let time = info["time"]?["created"]?.int, time >= since else { return nil }
                        return id
                    }
                }
                for join in machine.sessionsToJoin(running: running, created: created) {
                    let frames = try await client.readLog(session: join.session, after: join.after).compactMap { try? $0.get() }
                    let pending = try await backend.pending2(session: join.session)
                    try await execute(machine.joined(session: join.session, frames: frames, pending: pending), &machine, outbox)
                }
            case .postPrompt(let session):
                try await outbox.flush()
                guard let prompt = sendOnReady else { continue }
                if let watermark = machine.promptWatermark {
                    // A POST was attempted and failed: did it reach the server after all?
                    let frames = try await client.readLog(session: session, after: watermark).compactMap { try? $0.get() }
                    if let input = OpenCode2StreamMachine.admittedInput(frames, text: prompt.text) {
                        machine.promptWasPosted(input: input)
                        continue
                    }
                } else {
                    let marker = try await client.readLog(session: session, after: Int.max / 2).last
                    let synced = (try? marker?.get()).flatMap { $0.isSyncedMarker ? $0 : nil }
                    machine.watermark(session: session, seq: synced?.seq)
                }
                let receipt = try await backend.send2(prompt)
                machine.promptWasPosted(input: receipt.turn)
            }
        }
    }
}
