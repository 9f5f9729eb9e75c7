import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// The CodexMonitor stream's protocol rules, as a pure state machine (the shape
/// `OpenCodeStreamMachine` has): what happened goes in — a daemon notification, a resync's
/// reads, a quiet spell, the link's ups and downs, each with the time it happened — and what to
/// do comes out as actions. `CodexMonitorEventStream` (the I/O loop) only executes them, so
/// every rule here is tested from recorded transcripts and `resume_thread` snapshots, without a
/// socket.
///
/// The rules: the daemon never replays and silently drops events for slow clients, so every
/// (re)connection — and every time Tether itself had to drop notifications — is followed by a
/// resync: the threads that matter (the one asked for, those with a turn held open, those Codex
/// says are active) are re-read with `resume_thread`, and only what the stream had not emitted
/// goes out (the mapper deduplicates). A link silent for `keepalive` is checked with `ping` (the
/// daemon never pings and sets no TCP keepalive). A read the daemon lacks is a gap: said once,
/// and the stream goes on without it. `send --follow` sends its prompt only once connected and
/// resynced, so nothing of its turn can be missed, and finishes at that turn's `turn.completed`.
struct CodexMonitorStreamMachine {
    enum Action: Sendable, Equatable {
        /// Events for the consumer, already filtered, in order.
        case emit([Event])
        /// Re-read the threads that matter: the watched workspaces, their active threads when
        /// `listsActiveThreads`, then `resume_thread` for each of `threadsToRead(active:)`; feed
        /// the reads to `resynced`.
        case resync
        /// The link has been silent for `keepalive`: `ping` the daemon (a daemon without `ping`
        /// is fine; a ping that fails ends the connection).
        case ping
        /// `send --follow`: call `postingPrompt`, send the prompt, then `promptSent(turn:at:)`.
        case postPrompt
        /// Something to say on stderr (see `Note`).
        case note(Note)
        /// `send --follow` is done: its turn completed.
        case finish
    }

    /// What the I/O loop logs; the machine only decides that it is said (and, for the
    /// once-only ones, that it is said once).
    enum Note: Sendable, Equatable {
        /// Codex's own stderr, relayed by the daemon (`-v`).
        case codexStderr(workspace: String?, line: String)
        /// An app-server method the mapper does not map (`-v`).
        case unmapped(method: String)
        /// A daemon notification that is not an event (`-v`).
        case ignored(method: String)
        /// Tether fell behind and the RPC layer dropped this many notifications; a resync follows.
        case dropped(count: Int)
        /// The daemon lacks a read: what the stream does without, once per gap.
        case gap(Gap, message: String)
        /// A memory bound of the mapper's was reached (once per run).
        case boundReached(String)
    }

    /// A read an older or forked daemon may not have (it answers `unknown method`).
    enum Gap: Sendable, Hashable {
        /// `connect_workspace` for the session asked for.
        case connectWorkspace
        /// `list_threads`, to find the threads running when Tether connected.
        case listThreads
        /// `resume_thread`, to read what a thread did while Tether was away.
        case resumeThread

        /// What going without it costs, in the words the user sees.
        var consequence: String {
            switch self {
            case .connectWorkspace: "the workspace is not connected first; its thread is read as it is"
            case .listThreads: "threads already running when Tether connected are not re-read; live events still stream"
            case .resumeThread: "what a thread did while Tether was away is not re-read; live events still stream"
            }
        }
    }

    struct Configuration: Sendable {
        /// `--session`, as a full `WORKSPACE~THREAD`.
        var target: (workspace: String, thread: String)?
        /// The profile names a workspace: events of other workspaces are dropped.
        var filtersWorkspaces: Bool
        /// A silent link is pinged after this long.
        var keepalive: Duration
        /// Where the link goes (for `connection.state`).
        var endpoint: String
        /// `send --follow` has a prompt to send once connected and resynced.
        var hasPrompt: Bool
    }

    private(set) var mapper: CodexAppServerMapper
    private var filter: EventFilter
    /// Events carry their wire message as `raw` (the request's `raw`, `--raw`).
    private let keepsRaw: Bool
    private let configuration: Configuration
    /// The workspaces the current connection watches (ids).
    private var watched: Set<String> = []
    /// When something last came from the daemon (epoch milliseconds).
    private var lastActivity: Double = 0
    /// `send --follow`'s prompt: sent once, recognised by its turn after a drop.
    private(set) var prompt = CodexPromptTracker()
    private var reportedGaps: Set<Gap> = []
    /// A bound of the mapper's was reached and said so (once per run).
    private var boundReported = false

    init(request: EventsRequest, configuration: Configuration, mapper: CodexAppServerMapper = CodexAppServerMapper()) {
        self.configuration = configuration
        self.mapper = mapper
        filter = EventFilter(session: configuration.target.map { CodexMonitorSessionID.make(workspace: $0.workspace, thread: $0.thread) },
                             turn: request.turn, untilTurnCompletes: request.untilTurnCompletes)
        keepsRaw = request.raw
    }

    var isDone: Bool { filter.isDone }
    var target: (workspace: String, thread: String)? { configuration.target }

    // MARK: The link

    /// A connection attempt begins (`attempt` 1 is the first of the run).
    mutating func connecting(attempt: Int, at time: Double) -> [Action] {
        emit([Event.connection(attempt == 1 ? .connecting : .reconnecting, attempt: attempt, endpoint: configuration.endpoint)].stamped(at: time))
    }

    /// Connected and authenticated: nothing is replayed, so what was missed is read first.
    mutating func connected(at time: Double) -> [Action] {
        lastActivity = time
        return emit([Event.connection(.connected, endpoint: configuration.endpoint)].stamped(at: time)) + [.resync]
    }

    /// The connection ended; the next attempt comes after `retryIn`.
    mutating func disconnected(reason: String, retryIn: Duration, attempt: Int, at time: Double) -> [Action] {
        emit([Event.connection(.reconnecting, attempt: attempt, endpoint: configuration.endpoint,
                                  reason: "\(reason); retrying in \(retryIn.secondsText)")].stamped(at: time))
    }

    /// The reconnect policy gave up.
    mutating func gaveUp(reason: String, at time: Double) -> [Action] {
        emit([Event.connection(.failed, endpoint: configuration.endpoint, reason: reason)].stamped(at: time))
    }

    // MARK: What the daemon sends

    /// One daemon notification, received at `time` (epoch milliseconds); `raw` is its whole line.
    mutating func receive(method: String, params: JSONValue, raw: JSONValue, at time: Double) -> [Action] {
        lastActivity = time
        var notes: [Action] = []
        let workspace: String?
        var processReplaced = false
        switch method {
        case "app-server-event":
            workspace = CodexAppServerMapper.string(params, "workspace_id", "workspaceId")
            let inner = params["message"]?["method"]?.string ?? "(none)"
            processReplaced = inner == "codex/connected"
            if inner == "codex/stderr" {
                notes.append(.note(.codexStderr(workspace: workspace, line: params["message"]?["params"]?["message"]?.string ?? "")))
            } else if !CodexAppServerMapper.handledMethods.contains(inner) {
                notes.append(.note(.unmapped(method: inner)))
            }
        case "terminal-output", "terminal-exit":
            workspace = CodexAppServerMapper.string(params, "workspaceId", "workspace_id")
        default:
            return [.note(.ignored(method: method))]
        }
        // Events are broadcast for every workspace; a profile with a workspace sees only its own.
        if configuration.filtersWorkspaces, let workspace, !watched.contains(workspace) { return notes }
        var events = mapper.map(method: method, params: params)
        for index in events.indices {
            if keepsRaw, events[index].raw == nil { events[index].raw = raw }
            events[index].ts = time
        }
        // A new app-server: turns held open there may have died with the old one, and will not
        // say so. Re-reading their threads tells which (Codex reads a dead turn back `interrupted`).
        let resync = processReplaced && workspace.map(mapper.hasOpenTurns(inScope:)) == true
        return notes + emit(events) + (resync ? [.resync] : [])
    }

    /// A hot line read straight from its bytes (`CodexMonitorRPC.Incoming.hot`), received at
    /// `time`: what `receive(method:…)` does with the `app-server-event` it came in.
    mutating func receive(_ hot: CodexMonitorHotLine, at time: Double) -> [Action] {
        lastActivity = time
        if configuration.filtersWorkspaces, !watched.contains(hot.workspace) { return [] }
        return emit(mapper.map(hot).stamped(at: time))
    }

    /// The RPC layer dropped `count` notifications (Tether fell behind while a call waited):
    /// re-read what they may have carried.
    mutating func lost(count: Int, at time: Double) -> [Action] {
        lastActivity = time
        return [.note(.dropped(count: count)), .resync]
    }

    /// How long the loop may wait for the next notification before calling `tick`.
    func timeUntilTick(at time: Double) -> Duration {
        let due = lastActivity + configuration.keepalive.inSeconds * 1000
        return .milliseconds(Swift.max(0, due - time))
    }

    /// Nothing came: ping a link that has been silent for `keepalive`.
    mutating func tick(at time: Double) -> [Action] {
        guard time - lastActivity >= configuration.keepalive.inSeconds * 1000 else { return [] }
        lastActivity = time
        return [.ping]
    }

    // MARK: Resync

    /// Whether a resync lists the watched workspaces' threads to find the active ones (not when
    /// one session was asked for).
    var listsActiveThreads: Bool { configuration.target == nil }

    /// The threads a resync re-reads, in order: the one asked for, those with a turn held open,
    /// and the `active` ones `list_threads` found; each once.
    func threadsToRead(active: [(workspace: String, thread: String)]) -> [(workspace: String, thread: String)] {
        var threads: [(workspace: String, thread: String)] = []
        func add(_ workspace: String, _ thread: String) {
            if !threads.contains(where: { $0.workspace == workspace && $0.thread == thread }) { threads.append((workspace, thread)) }
        }
        if let target = configuration.target { add(target.workspace, target.thread) }
        for session in mapper.openSessions {
            if let parsed = CodexMonitorSessionID.parse(session) { add(parsed.workspace, parsed.thread) }
        }
        if listsActiveThreads {
            for (workspace, thread) in active { add(workspace, thread) }
        }
        return threads
    }

    /// Whether a thread that is gone (`notFound`) ends the stream: only the one asked for.
    func isTarget(workspace: String, thread: String) -> Bool {
        configuration.target.map { $0.workspace == workspace && $0.thread == thread } ?? false
    }

    /// A resync's reads, all done before any is mapped.
    mutating func resynced(_ snapshot: CodexMonitorSnapshot, at time: Double) -> [Action] {
        lastActivity = time
        watched = Set(snapshot.watched)
        var actions: [Action] = []
        var events: [Event] = []
        for (gap, error) in snapshot.missing where reportedGaps.insert(gap).inserted {
            actions.append(.note(.gap(gap, message: error.message)))
            events.append(.error(TetherError(.unsupported, "\(error.message); \(gap.consequence)", hint: error.hint, retryable: false)))
        }
        if let target = configuration.target,
           let read = snapshot.threads.first(where: { $0.workspace == target.workspace && $0.thread["id"]?.string == target.thread }) {
            let turns = (read.thread["turns"]?.array ?? []).compactMap { $0["id"]?.string }
            // The prompt went out but its answer was lost with the link: the first turn that
            // was not there before it is ours, held open so the reconcile below reads it whole
            // (it may have ended while the link was down). A prompt the daemon never read (it
            // answers only once the turn has started) is sent again below.
            if case .turn(let ours) = prompt.read(turns: turns, status: read.thread["status"], turnKnown: filter.targetTurn != nil) {
                filter.promptWasSent(turn: ours)
                events += mapper.started(session: CodexMonitorSessionID.make(workspace: target.workspace, thread: target.thread),
                                         turn: ours)
            }
        }
        for read in snapshot.threads {
            events += mapper.reconcile(scope: read.workspace, thread: read.thread)
        }
        actions += emit(events.stamped(at: time))
        if configuration.hasPrompt, !prompt.posted, !filter.isDone { actions.append(.postPrompt) }
        return actions
    }

    // MARK: send --follow

    /// The prompt is about to be sent: from now on a `turn.started` may be its turn.
    mutating func postingPrompt() {
        prompt.posting()
        filter.promptWasSent()
    }

    /// The daemon accepted the prompt at `time`; `turn` is the turn it started, when it said.
    /// That turn is held open from now on: should it start and end while the link is down, the
    /// resync after the reconnect still completes it (and `send --follow` finishes).
    mutating func promptSent(turn: String?, at time: Double) -> [Action] {
        filter.promptWasSent(turn: turn)
        guard let turn, let target = configuration.target else { return [] }
        let session = CodexMonitorSessionID.make(workspace: target.workspace, thread: target.thread)
        return emit(mapper.started(session: session, turn: turn).stamped(at: time))
    }

    // MARK: Emitting

    private static func mebibytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }

    private mutating func emit(_ events: [Event]) -> [Action] {
        let kept = filter.admit(events)
        var actions: [Action] = kept.isEmpty ? [] : [.emit(kept)]
        if !boundReported, mapper.releasedState > 0 || mapper.textNotAssembled > 0 {
            boundReported = true
            actions.append(.note(.boundReached(
                "more turns, items or threads are open at once, or more text streams into open items, than Tether keeps "
                + "(1,024 items; \(Self.mebibytes(mapper.textLimits.perItem)) of text or output an item, "
                + "\(Self.mebibytes(mapper.textLimits.overAll)) in all): the oldest open ones are let go of and text "
                + "past those limits is not kept; every delta still streams and item/completed still completes an item, but "
                + "an item whose turn ends first completes with the text kept")))
        }
        if filter.isDone { actions.append(.finish) }
        return actions
    }
}

/// What a resync read, before any of it is mapped.
struct CodexMonitorSnapshot: Sendable {
    /// The workspaces this connection watches (ids).
    var watched: [String]
    /// The threads read with `resume_thread`, in the order read (`thread` is the `thread`
    /// object of the answer). Threads that are gone are left out.
    var threads: [(workspace: String, thread: JSONValue)]
    /// Reads the daemon does not have, with the error that said so.
    var missing: [(gap: CodexMonitorStreamMachine.Gap, error: TetherError)] = []
}
