import Foundation
import Logging
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// The live side of the OpenCode backend, reduced to I/O: one SSE subscription
/// (`/global/event`, or `/event` on servers without it), the REST reads, and the execution of
/// what `OpenCodeStreamMachine` decides. Everything runs in one task, so the machine needs no
/// lock. What one network read brought goes to the consumer as one batch.
struct OpenCodeEventStream: Sendable {
    let backend: OpenCodeBackend
    let request: EventsRequest
    /// For `send --follow`: the prompt to post once the subscription is live, so nothing of the
    /// turn can be missed.
    let sendOnReady: SendRequest?

    private var client: OpenCodeClient { backend.client }
    private var logger: Logger { backend.logger }

    func run() -> EventStream {
        EventChannel.stream { channel in try await pump(channel) }
    }

    private func makeMachine() async -> OpenCodeStreamMachine {
        OpenCodeStreamMachine(
            request: request,
            configuration: .init(directory: backend.configuration.directory, pollInterval: backend.configuration.pollInterval,
                                 endpoint: client.configuration.baseURL, hasPrompt: sendOnReady != nil,
                                 promptSession: sendOnReady?.session),
            contextWindows: await backend.contextWindows())
    }

    private func pump(_ output: EventChannel) async throws {
        if try await backend.isGeneration2() {
            // A 2.x server: its own stream (`/api/event` and the durable session logs).
            try await OpenCode2EventStream(backend: backend, request: request, sendOnReady: sendOnReady).pump(output)
            return
        }
        if request.since != nil {
            throw TetherError(.unsupported, "--since (resuming from a cursor) needs an OpenCode 2.x server (its durable session log); this one speaks 1.x, which keeps no replay",
                              hint: "use --follow to stream from now on")
        }
        var machine = await makeMachine()
        let outbox = EventOutbox(channel: output)

        guard request.follow else {
            // A snapshot of what is current, then stop.
            try await execute(machine.resynced(try await readSnapshot(for: machine), at: Event.now()), &machine, outbox)
            try await outbox.flush()
            return
        }

        var useGlobal = true
        // The REST resync after a (re)connection can fail too — the server went away again
        // mid-resync — and so can `send --follow`'s prompt POST. That is a lost connection like
        // any other: reconnect (the next `server.connected` resyncs, and posts the prompt again
        // unless it arrived), on the same schedule, instead of ending the run.
        let subscription = OpenCodeSubscription(backend: backend, client: client, output: output, outbox: outbox,
                                                restSteps: "a resync or the prompt's POST")
        try await subscription.run { retries in
            // The current read's part frames' events, gathered here and handed to the outbox
            // before anything else is done (`receivePart`).
            var gathered: [Event] = []
            func handOver() {
                guard !gathered.isEmpty else { return }
                outbox.add(gathered)
                gathered = []
            }
            do {
                try await subscription.pump(useGlobal ? "/global/event" : "/event", scoped: !useGlobal,
                                            makeDecoder: { [request, logger] in
                    let strings = JSONStringTable(vocabulary: OpenCodeHotFrame.busyWords)
                    return { batch in
                        strings.startBatch()
                        return Self.decode(batch, at: Event.now(), raw: request.raw, strings: strings, logger: logger)
                    }
                }, leaving: Decoded.unreadable, isDone: { machine.isDone }, feed: { element in
                    if case .wire(let wire, let time) = element,
                       let followUps = machine.receivePart(wire, at: time, into: &gathered) {
                        if !followUps.isEmpty {
                            handOver()
                            try await execute(followUps, &machine, outbox)
                        }
                    } else {
                        handOver()
                        try await handle(element, &machine, outbox)
                    }
                    if element.isEvent { retries.madeProgress() }
                }, endOfBatch: handOver)
                return true
            } catch let error as NetError where error.status == 404 && useGlobal && !machine.connectedOnce {
                logger.info("no /global/event on this server; falling back to /event?directory=")
                useGlobal = false
                return false
            }
        }
    }

    /// What one network read of the SSE subscription was, decoded away from the machine's task.
    enum Decoded: Sendable {
        /// A change of the link (connecting, open, disconnected), or a comment.
        case link(EventSource.Element, receivedAt: Double)
        case wire(OpenCodeWireEvent, receivedAt: Double)
        /// An event that could not be read (logged where it was decoded).
        case unreadable

        var isEvent: Bool {
            switch self {
            case .wire, .unreadable: return true
            case .link: return false
            }
        }
    }

    /// One network read's elements, decoded.
    static func decode(_ batch: [EventSource.Element], at time: Double, raw: Bool, strings: JSONStringTable,
                       logger: Logger) -> [Decoded] {
        batch.map { element in
            guard case .event(let sse) = element else { return .link(element, receivedAt: time) }
            do {
                return .wire(try OpenCodeWireEvent.decode(sse.dataBytes, strings: strings, keepingRaw: raw), receivedAt: time)
            } catch {
                logger.warning("skipping an OpenCode event that cannot be read", metadata: ["error": "\(error)", "data": "\(sse.data.prefix(200))"])
                return .unreadable
            }
        }
    }

    private func handle(_ element: Decoded, _ machine: inout OpenCodeStreamMachine, _ outbox: EventOutbox) async throws {
        switch element {
        case .link(let link, let time):
            try await execute(machine.receive(link, at: time), &machine, outbox)
        case .wire(let wire, let time):
            try await execute(machine.receive(wire, at: time), &machine, outbox)
        case .unreadable:
            break
        }
    }

    /// Runs the machine's actions, and those they lead to. Events wait in the outbox until the
    /// batch ends or I/O is about to happen, so they go out in order and never wait on I/O.
    private func execute(_ actions: [OpenCodeStreamMachine.Action], _ machine: inout OpenCodeStreamMachine,
                         _ outbox: EventOutbox) async throws {
        for action in actions {
            switch action {
            case .emit(let events):
                outbox.add(events)
            case .finish:
                return
            case .resync:
                try await outbox.flush()
                let snapshot = try await readSnapshot(for: machine)
                try await execute(machine.resynced(snapshot, at: Event.now()), &machine, outbox)
            case .reconcile(let session, let wire):
                try await outbox.flush()
                let messages = try await messages(of: session)
                try await execute(machine.reconciled(session: session, messages: messages, then: wire, at: Event.now()),
                                  &machine, outbox)
            case .postPrompt:
                guard let prompt = sendOnReady else { continue }
                try await outbox.flush()
                // What is there before, so a turn that comes and goes unseen is still ours, and a
                // POST that failed but reached the server is not made twice.
                let before = try await messages(of: prompt.session) ?? []
                guard machine.postingPrompt(userMessages: OpenCodeStreamMachine.userMessages(before)) else { continue }
                // A retryable failure ends this connection like a failed resync (see `pump`); the
                // next resync decides whether to post again.
                _ = try await backend.send(prompt)
                machine.promptPosted()
            case .noteGeneration(let generation, let listed):
                let metadata: Logger.Metadata = ["api": "\(generation.rawValue)", "session_status": "\(listed ? "listed" : "not listed")"]
                switch generation {
                case .legacy:
                    logger.info("OpenCode server speaks the legacy API (no GET /permission): pending permissions come from the stream, replies go to /session/{id}/permissions/{id}",
                                metadata: metadata)
                case .v1:
                    logger.info("OpenCode server speaks the V1 API", metadata: metadata)
                }
            case .notePolling:
                logger.info("connected but silent while a session is busy: polling OpenCode over REST")
            case .noteBoundReached(let what):
                logger.warning("\(what)")
            }
        }
    }

    /// What the stream could have missed: statuses, the messages of the sessions the machine
    /// names, permissions, questions — every read done before any is mapped. Routes a server generation
    /// lacks (`/session/status`, `/permission`) read as nil: see `OpenCodeClient.getIfServed`.
    private func readSnapshot(for machine: OpenCodeStreamMachine) async throws -> OpenCodeSnapshot {
        let statuses = try await client.getIfServed("/session/status").map { $0.object ?? [:] }
        var messages: [(session: String, messages: [JSONValue])] = []
        for session in machine.sessionsToRead(statuses: statuses) {
            if let list = try await self.messages(of: session) { messages.append((session, list)) }
        }
        let permissions = try await client.getIfServed("/permission")
        // Questions came with the permission list (V1). A server without them answers 404, or
        // its catch-all proxy answers whatever it answers: any failure reads as "not listed"
        // (the live stream still carries `question.*`).
        let questions = permissions == nil ? nil : try? await client.getIfServed("/question")
        return OpenCodeSnapshot(statuses: statuses, messages: messages, permissions: permissions, questions: questions)
    }

    /// `GET /session/{id}/message`, oldest first; nil when the session is gone.
    private func messages(of session: String) async throws -> [JSONValue]? {
        do {
            return try await client.get("/session/\(OpenCodeBackend.escape(session))/message").array ?? []
        } catch let error as TetherError where error.code == .notFound {
            return nil
        }
    }
}
