import Foundation
import Logging
import TetherCore
import TetherNet

/// The live side of the OpenCode backend: one SSE subscription (`/global/event`, or `/event`
/// on servers without it), the mapper, and the REST resync that makes up for OpenCode having
/// no replay. Everything runs in one task, so the mapper's state needs no lock.
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

    /// Per-run state, owned by the pump's task.
    private struct State {
        var mapper = OpenCodeEventMapper()
        var sent = false
        var targetTurn: String?
        var lastActivity = ContinuousClock.now
        var done = false
        var connectedOnce = false
        /// `send --follow`: the session's user messages from before our prompt.
        var knownUserMessages: Set<String>?
        /// What the server answered at the last resync (logged when it changes).
        var generation: OpenCodeAPIGeneration?
    }

    private func pump(_ output: EventChannel) async throws {
        var state = State()
        state.mapper.contextWindows = await backend.contextWindows()

        guard request.follow else {
            // A snapshot of what is current, then stop.
            for event in try await resync(&state) where keep(event, &state) { try await output.send(event) }
            return
        }

        var useGlobal = true
        // The REST resync after a (re)connection can fail too — the server went away again
        // mid-resync. That is a lost connection like any other: reconnect (the next
        // `server.connected` resyncs), on the same schedule, instead of ending the run.
        var resyncPolicy = ReconnectPolicy(configuration: backend.configuration.reconnect)
        while !Task.isCancelled {
            let endpoint = useGlobal ? "/global/event" : "/event"
            let scoped = !useGlobal
            let source = EventSource(client: client.http, configuration: .init(
                makeRequest: { [client] _ in
                    HTTPRequest(.get, client.url(endpoint, scoped: scoped),
                                headers: [("Accept", "text/event-stream"), ("Cache-Control", "no-cache")],
                                authorization: client.authorization, connectTimeout: .seconds(10))
                },
                liveness: backend.configuration.liveness,
                policy: ReconnectPolicy(configuration: backend.configuration.reconnect)))
            do {
                for try await element in source {
                    try await handle(element, &state, output)
                    if case .event = element { resyncPolicy.madeProgress() }
                    if state.done { return }
                }
                return
            } catch let error as NetError where error.status == 404 && useGlobal && !state.connectedOnce {
                logger.info("no /global/event on this server; falling back to /event?directory=")
                useGlobal = false
            } catch let error as NetError {
                throw client.mapTransport(error)
            } catch let error as TetherError where error.retryable && !Task.isCancelled {
                resyncPolicy.connecting()
                switch resyncPolicy.failed(.transportError, at: .now) {
                case .reconnect(let delay, let attempt):
                    logger.info("OpenCode went away during a resync; reconnecting", metadata: ["error": "\(error.message)"])
                    try await output.send(.connection(.reconnecting, attempt: attempt, endpoint: client.configuration.baseURL,
                                                      reason: "\(error.message); retrying in \(delay.secondsText)"))
                    try await Task.sleep(for: delay)
                case .stop:
                    throw error
                }
            }
        }
    }

    private func handle(_ element: EventSource.Element, _ state: inout State,
                        _ output: EventChannel) async throws {
        switch element {
        case .connecting(let attempt):
            try await output.send(.connection(attempt == 1 ? .connecting : .reconnecting, attempt: attempt, endpoint: client.configuration.baseURL))
        case .open:
            state.connectedOnce = true
            try await output.send(.connection(.connected, endpoint: client.configuration.baseURL))
        case .disconnected(let reason, let retryIn, let attempt):
            try await output.send(.connection(.reconnecting, attempt: attempt,
                                     reason: (reason?.detail ?? "the server closed the stream") + "; retrying in \(retryIn.secondsText)"))
        case .comment:
            break
        case .event(let sse):
            let wire: OpenCodeWireEvent
            do {
                wire = try OpenCodeWireEvent.decode(sse.data)
            } catch {
                logger.warning("skipping an OpenCode event that cannot be read", metadata: ["error": "\(error)", "data": "\(sse.data.prefix(200))"])
                return
            }
            switch wire.type {
            case "server.connected":
                // Nothing is replayed: read what we missed over REST, then go on live.
                for event in try await resync(&state) { try await emit(event, &state, output) }
                if let prompt = sendOnReady, !state.sent {
                    // Remember what was there before, so a turn that comes and goes unseen is still ours.
                    let before = try await client.get("/session/\(OpenCodeBackend.escape(prompt.session))/message").array ?? []
                    state.knownUserMessages = Set(before.filter { $0["info"]?["role"]?.string == "user" }
                        .compactMap { $0["info"]?["id"]?.string })
                    state.sent = true
                    _ = try await backend.send(prompt)
                }
                return
            case "server.heartbeat":
                try await pollIfSilent(&state, output)
                return
            default:
                break
            }
            if let directory = backend.configuration.directory, let eventDirectory = wire.directory,
               eventDirectory != "global", eventDirectory != directory {
                return
            }
            state.lastActivity = .now
            if wire.type == "session.idle" || (wire.type == "session.status" && wire.properties["status"]?["type"]?.string == "idle"),
               let session = wire.properties["sessionID"]?.string, state.mapper.hasOpenParts(session: session) {
                // Complete the turn's parts from the authoritative REST copy before closing it.
                for event in try await reconcileSession(session, busy: true, &state) { try await emit(event, &state, output) }
            }
            for var event in state.mapper.map(wire) {
                if event.raw == nil { event.raw = wire.raw }
                try await emit(event, &state, output)
            }
        }
    }

    /// Connected, heartbeating, yet silent while a session is busy: some servers stop
    /// delivering events (OpenCode issue #46733). Poll REST rather than trust the silence.
    private func pollIfSilent(_ state: inout State, _ output: EventChannel) async throws {
        // Busy as far as we know, or we just sent a prompt whose turn has not shown up yet.
        let awaitingOurTurn = state.sent && !state.done && request.untilTurnCompletes
        let busy = awaitingOurTurn || !state.mapper.sessionsWithOpenTurns.isEmpty
            || state.mapper.statuses.values.contains { $0 != .idle }
        guard busy, ContinuousClock.now - state.lastActivity >= backend.configuration.pollInterval else { return }
        logger.info("connected but silent while a session is busy: polling OpenCode over REST")
        state.lastActivity = .now
        for event in try await resync(&state) { try await emit(event, &state, output) }
    }

    private func emit(_ event: Event, _ state: inout State, _ output: EventChannel) async throws {
        guard keep(event, &state) else { return }
        try await output.send(event)
        if request.untilTurnCompletes, event.type == .turnCompleted, event.turn == state.targetTurn {
            state.done = true
        }
    }

    /// Applies `--session` / `--turn`, and for `send --follow` picks the turn the prompt started.
    private func keep(_ event: Event, _ state: inout State) -> Bool {
        if event.type == .connectionState { return true }
        if let session = request.session, event.session != session { return false }
        if request.untilTurnCompletes {
            if state.targetTurn == nil, event.type == .turnStarted, state.sent { state.targetTurn = event.turn }
            guard let target = state.targetTurn else { return false }
            return event.turn == target || (event.turn == nil && event.type == .sessionStatus)
        }
        if let turn = request.turn, event.turn != turn { return false }
        return true
    }

    /// What the stream could have missed: statuses, the running turns' messages, permissions.
    /// Every REST read is done before the mapper sees any of it: the mapper remembers what it
    /// has emitted, so a read that failed halfway (the server went away again) must leave it
    /// untouched, or the next resync would take what was mapped and never sent as already sent.
    /// Reads of routes that a server generation lacks (`/session/status`, `/permission`) answer
    /// "none" there, never an error: see `OpenCodeClient.getIfServed`.
    private func resync(_ state: inout State) async throws -> [Event] {
        let statuses = try await client.getIfServed("/session/status").map { $0.object ?? [:] }
        var sessions = Set(statuses.map { Array($0.keys) } ?? []).union(state.mapper.sessionsWithOpenTurns)
        let awaited = state.sent && state.targetTurn == nil ? sendOnReady?.session : nil
        if let awaited { sessions.insert(awaited) }
        if let only = request.session {
            // Without a status list, the one session asked for is looked at every time.
            sessions = statuses == nil ? [only] : sessions.intersection([only])
        }
        var snapshots: [(session: String, messages: [JSONValue])] = []
        for session in sessions.sorted() {
            if let messages = try await messages(of: session) { snapshots.append((session, messages)) }
        }
        let permissions = try await client.getIfServed("/permission")
        note(OpenCodeAPIGeneration(permissionList: permissions), statusList: statuses != nil, &state)

        var events: [Event] = []
        var busySessions: Set<String> = []
        for (session, messages) in snapshots {
            let busy = statuses.map { OpenCodeBackend.status($0[session]) != .idle }
                ?? OpenCodeEventMapper.lastTurnIsRunning(messages)
            if busy { busySessions.insert(session) }
            events += state.mapper.reconcile(session: session, messages: messages, busy: busy,
                                             adoptingAnyUserMessageBut: session == awaited ? state.knownUserMessages : nil)
        }
        let scope = request.session.map { Set([$0]) }
        if let permissions {
            events += state.mapper.reconcile(permissions: permissions.array ?? [], sessions: scope)
        } else {
            state.mapper.reconcileStreamedPermissions(
                messages: Dictionary(snapshots.map { ($0.session, $0.messages) }, uniquingKeysWith: { first, _ in first }),
                busy: busySessions, sessions: scope)
        }
        return events
    }

    /// Logs (at `-v`) which API generation the server speaks, when it is new or has changed.
    private func note(_ generation: OpenCodeAPIGeneration, statusList: Bool, _ state: inout State) {
        guard state.generation != generation else { return }
        state.generation = generation
        switch generation {
        case .legacy:
            logger.info("OpenCode server speaks the legacy API (no GET /permission): pending permissions come from the stream, replies go to /session/{id}/permissions/{id}",
                        metadata: ["api": "legacy", "session_status": "\(statusList ? "listed" : "not listed")"])
        case .v1:
            logger.info("OpenCode server speaks the V1 API", metadata: ["api": "v1", "session_status": "\(statusList ? "listed" : "not listed")"])
        }
    }

    private func reconcileSession(_ session: String, busy: Bool, _ state: inout State) async throws -> [Event] {
        guard let messages = try await messages(of: session) else { return [] }
        return state.mapper.reconcile(session: session, messages: messages, busy: busy)
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
