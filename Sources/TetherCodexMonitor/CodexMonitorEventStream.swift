import Logging
import TetherCore
import TetherNet

/// The live side of the CodexMonitor backend: one connection, the mapper, and the resync that
/// makes up for a daemon that never replays and silently drops events for slow clients. After
/// every (re)connect the threads that matter (the one asked for, those with a turn we hold open,
/// those Codex says are active) are re-read with `resume_thread` and only what was missed is
/// emitted; Codex then re-announces their pending approvals, deduplicated by the mapper. A
/// silent connection is checked with `ping`. Everything runs in one task: no locks.
struct CodexMonitorEventStream: Sendable {
    let backend: CodexMonitorBackend
    let request: EventsRequest
    /// For `send --follow`: the prompt to send once the connection is up and resynced, so
    /// nothing of its turn can be missed.
    let sendOnReady: SendRequest?

    private var configuration: CodexMonitorBackend.Configuration { backend.configuration }
    private var logger: Logger { backend.logger }

    func run() -> EventStream {
        EventChannel.stream { channel in try await pump(channel) }
    }

    private typealias Output = EventChannel

    /// Per-run state, owned by the pump's task.
    private struct State {
        var mapper = CodexMonitorEventMapper()
        /// `--session`, as a full `WORKSPACE~THREAD` id.
        var target: (workspace: String, thread: String)?
        var sessionFilter: String?
        var sent = false
        var targetTurn: String?
        var done = false
        /// Notifications read from the daemon, over all connections.
        var notifications = 0
        /// What the stream does without because the daemon lacks a method, each said once
        /// (`withoutIfMissing`).
        var reportedGaps: Set<String> = []
        /// A memory bound of the mapper's was reached and said so (once per run).
        var boundReported = false
    }

    private func pump(_ output: Output) async throws {
        var state = State()
        state.target = try request.session.map(backend.parseSession)
        state.sessionFilter = state.target.map { CodexMonitorSessionID.make(workspace: $0.workspace, thread: $0.thread) }

        guard request.follow || sendOnReady != nil else {
            // What is current, then stop.
            let client = try await backend.open()
            defer { client.close() }
            let watched = try await backend.watchedWorkspaces(client)
            for event in try await resync(client, watched: watched, &state) where !state.done { try await emit(event, &state, output) }
            for notification in try await Self.settle(client, quiet: configuration.settle) {
                try await handle(notification.method, notification.params, raw: notification.raw, watched: watched, &state, output)
            }
            return
        }

        var policy = ReconnectPolicy(configuration: configuration.reconnect)
        try await output.send(.connection(.connecting, attempt: 1, endpoint: configuration.endpoint))
        while true {
            try Task.checkCancellation()
            policy.connecting()
            let failure: ReconnectPolicy.Failure
            let reason: String
            let notificationsBefore = state.notifications
            do {
                let client = try await backend.open()
                defer { client.close() }
                policy.connected(at: .now)
                try await output.send(.connection(.connected, endpoint: configuration.endpoint))
                try await live(client, &state, output)
                if state.done { return }
                failure = .streamEnded
                reason = "the daemon closed the connection"
            } catch let error as TetherError where error.retryable || error.code == .unavailable || error.code == .timeout {
                failure = .transportError
                reason = error.message
            }
            // A connection that delivered is not one that refuses us: the schedule starts over.
            if state.notifications > notificationsBefore { policy.madeProgress() }
            switch policy.failed(failure, at: .now) {
            case .reconnect(let delay, let attempt):
                logger.info("CodexMonitor stream lost; reconnecting", metadata: ["reason": "\(reason)", "attempt": "\(attempt)"])
                try await output.send(.connection(.reconnecting, attempt: attempt, endpoint: configuration.endpoint,
                                         reason: "\(reason); retrying in \(delay.secondsText)"))
                try await Task.sleep(for: delay)
            case .stop(let why):
                try await output.send(.connection(.failed, endpoint: configuration.endpoint, reason: reason))
                throw TetherError(.unavailable, "gave up on CodexMonitor at \(configuration.endpoint) (\(why)): \(reason)",
                                  hint: "`tether check -p \(configuration.profile)` tests the connection", retryable: true)
            }
        }
    }

    /// One connection's life: resync, maybe send, then notifications until the end.
    private func live(_ client: CodexMonitorClient, _ state: inout State, _ output: Output) async throws {
        let watched = try await backend.watchedWorkspaces(client)
        var notes: [Event] = []
        if let target = state.target {
            _ = try await withoutIfMissing("the workspace is not connected first; its thread is read as it is", &state, &notes) {
                try await client.connectWorkspace(target.workspace)
            }
        }
        for event in try await notes + resync(client, watched: watched, &state) where !state.done { try await emit(event, &state, output) }
        if state.done { return }
        if let prompt = sendOnReady, !state.sent {
            state.sent = true  // never twice, even if the connection drops before the answer
            let receipt = try await backend.send(prompt, using: client)
            state.targetTurn = receipt.turn
        }
        while !state.done {
            let poll: CodexMonitorRPC.Poll
            do {
                poll = try await client.rpc.poll(timeout: configuration.keepalive)
            } catch let failure as CodexMonitorRPC.Failure {
                throw CodexMonitorClient.tetherError(failure, method: "(events)", doing: "reading events", configuration: configuration)
            }
            switch poll {
            case .ended:
                return
            case .timedOut:
                // The daemon never pings and sets no TCP keepalive: make sure the link is alive.
                do {
                    _ = try await client.call("ping", doing: "checking a silent connection", timeout: configuration.pingTimeout)
                } catch let error as TetherError where error.code == .unsupported {}
            case .incoming(.lost(let count)):
                logger.warning("Tether fell behind and dropped CodexMonitor events; re-reading the active threads",
                               metadata: ["dropped": "\(count)"])
                for event in try await resync(client, watched: watched, &state) where !state.done { try await emit(event, &state, output) }
            case .incoming(.notification(let method, let params, let raw)):
                state.notifications += 1
                try await handle(method, params, raw: raw, watched: watched, &state, output)
            }
        }
    }

    private func handle(_ method: String, _ params: JSONValue, raw: JSONValue, watched: [CodexMonitorWorkspace],
                        _ state: inout State, _ output: Output) async throws {
        let workspace: String?
        switch method {
        case "app-server-event":
            workspace = CodexMonitorEventMapper.string(params, "workspace_id", "workspaceId")
            let inner = params["message"]?["method"]?.string ?? "(none)"
            if inner == "codex/stderr" {
                logger.debug("codex stderr", metadata: ["workspace": "\(workspace ?? "?")", "line": "\(params["message"]?["params"]?["message"]?.string ?? "")"])
            } else if !CodexMonitorEventMapper.handledMethods.contains(inner) {
                logger.debug("CodexMonitor event not mapped", metadata: ["method": "\(inner)"])
            }
        case "terminal-output", "terminal-exit":
            workspace = CodexMonitorEventMapper.string(params, "workspaceId", "workspace_id")
        default:
            logger.debug("CodexMonitor notification ignored", metadata: ["method": "\(method)"])
            return
        }
        // Events are broadcast for every workspace; a profile with a workspace sees only its own.
        if configuration.workspace != nil, let workspace, !watched.contains(where: { $0.id == workspace }) { return }
        for var event in state.mapper.map(method: method, params: params) where !state.done {
            if event.raw == nil { event.raw = raw }
            try await emit(event, &state, output)
        }
        if !state.boundReported, state.mapper.releasedState > 0 {
            state.boundReported = true
            logger.warning("more turns, items or threads are open at once than Tether keeps (1,024 items): the oldest open ones are let go of; their deltas still stream and item/completed still completes them")
        }
    }

    /// Re-reads the threads that matter and returns what the stream had not emitted.
    private func resync(_ client: CodexMonitorClient, watched: [CodexMonitorWorkspace], _ state: inout State) async throws -> [Event] {
        var targets: [(workspace: String, thread: String)] = []
        func add(_ workspace: String, _ thread: String) {
            if !targets.contains(where: { $0.workspace == workspace && $0.thread == thread }) { targets.append((workspace, thread)) }
        }
        if let target = state.target { add(target.workspace, target.thread) }
        for session in state.mapper.openSessions {
            if let parsed = CodexMonitorSessionID.parse(session) { add(parsed.workspace, parsed.thread) }
        }
        var events: [Event] = []
        if state.target == nil {
            for workspace in watched {
                let threads = try await withoutIfMissing("threads already running when Tether connected are not re-read; live events still stream",
                                                         &state, &events) {
                    try await backend.api("listing the threads of workspace \(workspace.id)") { try await client.threads(in: workspace) }
                }
                for thread in threads ?? [] where CodexMonitorThread.isActive(thread) {
                    if let id = thread["id"]?.string { add(workspace.id, id) }
                }
            }
        }
        for (workspace, thread) in targets {
            do {
                let object = try await withoutIfMissing("what a thread did while Tether was away is not re-read; live events still stream",
                                                        &state, &events) {
                    try await backend.resume(client, workspace: workspace, thread: thread)
                }
                if let object { events += state.mapper.reconcile(workspace: workspace, thread: object) }
            } catch let error as TetherError where error.code == .notFound && !(state.target.map { $0 == (workspace, thread) } ?? false) {
                logger.info("a thread went away while Tether was disconnected", metadata: ["thread": "\(thread)", "error": "\(error.message)"])
            }
        }
        return events
    }

    /// A read that an older or forked daemon may not have (it answers `unknown method`): the
    /// stream goes on without it, and says once what that costs — at `-v`, and as an
    /// `error` event with `retryable: false`. nil when the method is missing.
    private func withoutIfMissing<T>(_ consequence: String, _ state: inout State, _ notes: inout [Event],
                                     _ read: () async throws -> T) async throws -> T? {
        do {
            return try await read()
        } catch let error as TetherError where error.code == .unsupported {
            guard state.reportedGaps.insert(consequence).inserted else { return nil }
            logger.info("CodexMonitor daemon lacks a method; going on without it",
                        metadata: ["error": "\(error.message)", "consequence": "\(consequence)"])
            notes.append(.error(TetherError(.unsupported, "\(error.message); \(consequence)", hint: error.hint, retryable: false)))
            return nil
        }
    }

    private func emit(_ event: Event, _ state: inout State, _ output: Output) async throws {
        let event = backend.answers.filledIn(event)
        guard keep(event, &state) else { return }
        try await output.send(event)
        if request.untilTurnCompletes, event.type == .turnCompleted, event.turn == state.targetTurn {
            state.done = true
        }
    }

    /// Applies `--session` / `--turn`, and for `send --follow` keeps to the turn the prompt started.
    private func keep(_ event: Event, _ state: inout State) -> Bool {
        // The link's state and errors of the stream itself concern every consumer.
        if event.type == .connectionState || (event.type == .error && event.session == nil) { return true }
        if let session = state.sessionFilter, event.session != session { return false }
        if request.untilTurnCompletes {
            if state.targetTurn == nil, state.sent, event.type == .turnStarted { state.targetTurn = event.turn }
            guard let target = state.targetTurn else { return false }
            return event.turn == target || (event.turn == nil && event.type == .sessionStatus)
        }
        if let turn = request.turn, event.turn != turn { return false }
        return true
    }

    /// Collects notifications until none has come for `quiet` (at most four times that): long
    /// enough for Codex to re-announce the pending requests of threads just resumed.
    static func settle(_ client: CodexMonitorClient, quiet: Duration) async throws
        -> [(method: String, params: JSONValue, raw: JSONValue)] {
        var collected: [(method: String, params: JSONValue, raw: JSONValue)] = []
        let deadline = ContinuousClock.now + quiet * 4
        while ContinuousClock.now < deadline {
            let poll: CodexMonitorRPC.Poll
            do {
                poll = try await client.rpc.poll(timeout: Swift.min(quiet, deadline - .now))
            } catch let failure as CodexMonitorRPC.Failure {
                throw CodexMonitorClient.tetherError(failure, method: "(events)", doing: "reading events", configuration: client.configuration)
            }
            switch poll {
            case .timedOut, .ended: return collected
            case .incoming(.lost): continue
            case .incoming(.notification(let method, let params, let raw)): collected.append((method, params, raw))
            }
        }
        return collected
    }
}
