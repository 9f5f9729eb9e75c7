import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// The `codex` stream's protocol rules as a pure state machine (the shape of
/// `OpenCodeStreamMachine` and `CodexMonitorStreamMachine`): what happened goes in — a message,
/// a resync's reads, the link's ups and downs — and what to do comes out as actions, which
/// `CodexAppServerEventStream` executes.
///
/// The rules follow the protocol note's "what a client must do to lose nothing across a
/// reconnect": the app-server keeps no cursor and replays nothing, so every connection starts
/// with a resync — each thread that matters (the one asked for, those with a turn held open,
/// those the server says are active) is `thread/resume`d, which subscribes this connection and
/// makes the server send its pending requests again, and the snapshot is reconciled: only what
/// was not emitted yet goes out (`item/completed` is the truth, approvals are deduplicated by
/// request id + item). A new stdio child is a new app-server: what the old one asked can no
/// longer be answered. `send --follow` sends its prompt only once resynced, with a
/// `clientUserMessageId`, so a prompt whose answer was lost with the link is found in the
/// thread instead of being sent twice.
struct CodexAppServerStreamMachine {
    enum Action: Sendable, Equatable {
        case emit([Event])
        /// `thread/resume` each of `threadsToRead(active:)` (after listing the active threads
        /// when `listsActiveThreads`), then feed the threads to `resynced`.
        case resync
        /// `thread/resume` these threads (this connection is not subscribed to them yet: a turn
        /// another client started in them reaches only subscribers), then feed them to `resynced`.
        case resume([String])
        /// `send --follow`: call `postingPrompt`, send the prompt, then `promptSent`.
        case postPrompt
        /// The consumer lost messages (it fell behind): say so on stderr; a resync follows.
        case noteDropped(Int)
        /// `send --follow` is done.
        case finish
    }

    struct Configuration: Sendable {
        /// `--session` (a thread id).
        var target: String?
        var endpoint: String
        var hasPrompt: Bool
        /// Every connection is a new app-server process (a stdio child).
        var newProcessPerConnection: Bool
    }

    private(set) var mapper = CodexAppServerMapper(answersQuestions: true)
    private var filter: EventFilter
    private let keepsRaw: Bool
    private let configuration: Configuration
    /// `send --follow`'s prompt: sent once, recognised by its turn after a drop.
    private(set) var prompt = CodexPromptTracker()
    private var connections = 0
    /// The target thread had no rollout (no turn yet) at the last resync, so the connection
    /// could not subscribe to it: once the prompt has started a turn, it is resumed.
    private var targetAwaitsRollout = false
    /// The threads this connection is subscribed to (resumed, or asked to be).
    private var subscribed: Set<String> = []

    init(request: EventsRequest, configuration: Configuration) {
        self.configuration = configuration
        filter = EventFilter(session: configuration.target, turn: request.turn, untilTurnCompletes: request.untilTurnCompletes)
        keepsRaw = request.raw
    }

    var isDone: Bool { filter.isDone }
    var target: String? { configuration.target }
    var listsActiveThreads: Bool { configuration.target == nil }

    // MARK: The link

    mutating func connecting(attempt: Int, at time: Double) -> [Action] {
        emit([Event.connection(attempt == 1 ? .connecting : .reconnecting, attempt: attempt, endpoint: configuration.endpoint)].stamped(at: time))
    }

    mutating func connected(at time: Double) -> [Action] {
        connections += 1
        subscribed = []
        var events = [Event.connection(.connected, endpoint: configuration.endpoint)]
        if connections > 1, configuration.newProcessPerConnection {
            // The old child took its pending requests with it; their ids will be reused.
            events += mapper.processReplaced(scope: nil)
        }
        return emit(events.stamped(at: time)) + [.resync]
    }

    mutating func disconnected(reason: String, retryIn: Duration, attempt: Int, at time: Double) -> [Action] {
        emit([Event.connection(.reconnecting, attempt: attempt, endpoint: configuration.endpoint,
                               reason: "\(reason); retrying in \(retryIn.secondsText)")].stamped(at: time))
    }

    mutating func gaveUp(reason: String, at time: Double) -> [Action] {
        emit([Event.connection(.failed, endpoint: configuration.endpoint, reason: reason)].stamped(at: time))
    }

    // MARK: Messages

    /// One message the server sent unasked (a notification or a request), received at `time`.
    mutating func receive(_ message: CodexAppServerMessage, at time: Double) -> [Action] {
        switch message {
        case .hot(let hot, _):
            // A delta or an item started: never a thread's status.
            return emit(Self.stamped(mapper.map(scope: nil, hot: hot), raw: keepsRaw ? message.json : nil, at: time))
        case .whole(let message):
            return emit(Self.stamped(mapper.map(scope: nil, message: message), raw: keepsRaw ? message : nil, at: time))
                + subscribeIfNew(message)
        }
    }

    /// `events` at `time`, each carrying `raw` unless it has its own. Static: as a method it
    /// would borrow the machine while the mapper, in its argument, changes it — a copy of the
    /// whole state for every message, and of every part's text (bench/PROFILE.md).
    private static func stamped(_ events: [Event], raw: JSONValue?, at time: Double) -> [Event] {
        var events = events
        for index in events.indices {
            if let raw, events[index].raw == nil { events[index].raw = raw }
            events[index].ts = time
        }
        return events
    }

    /// `thread/status/changed` reaches every connection; the rest of a thread only its
    /// subscribers. A thread this stream follows that becomes active (another client started a
    /// turn in it) while the connection is not subscribed to it is resumed.
    private mutating func subscribeIfNew(_ message: JSONValue) -> [Action] {
        guard message["method"]?.string == "thread/status/changed",
              CodexThread.isActive(["status": message["params"]?["status"] ?? .null]),
              let thread = message["params"]?["threadId"]?.string,
              configuration.target == nil || configuration.target == thread, !subscribed.contains(thread) else { return [] }
        subscribed.insert(thread)
        return [.resume([thread])]
    }

    /// A thread could not be resumed (no rollout yet): asked again when it next becomes active.
    mutating func resumeFailed(_ thread: String) {
        subscribed.remove(thread)
    }

    mutating func lost(count: Int) -> [Action] {
        [.noteDropped(count), .resync]
    }

    // MARK: Resync

    /// The threads a resync resumes: the one asked for, those with a turn held open, and the
    /// active ones; each once.
    func threadsToRead(active: [String]) -> [String] {
        var threads: [String] = []
        for thread in [configuration.target].compactMap({ $0 }) + mapper.openSessions + (listsActiveThreads ? active : [])
        where !threads.contains(thread) {
            threads.append(thread)
        }
        return threads
    }

    /// The threads the resync resumed (each `thread/resume`'s `thread`, turns included);
    /// `targetHasNoRollout`: the target could not be resumed, having no turn yet.
    mutating func resynced(_ threads: [JSONValue], targetHasNoRollout: Bool = false, at time: Double) -> [Action] {
        subscribed.formUnion(threads.compactMap { $0["id"]?.string })
        var threads = threads
        targetAwaitsRollout = targetHasNoRollout
        if targetHasNoRollout, let target = configuration.target {
            threads.append(["id": .string(target), "status": ["type": "idle"], "turns": []])
        }
        var events: [Event] = []
        if let target = configuration.target, let read = threads.first(where: { $0["id"]?.string == target }) {
            let turns = (read["turns"]?.array ?? []).compactMap { $0["id"]?.string }
            // A prompt lost with the link is sent again below, with the same clientUserMessageId.
            if case .turn(let ours) = prompt.read(turns: turns, status: read["status"], turnKnown: filter.targetTurn != nil) {
                filter.promptWasSent(turn: ours)
                events += mapper.started(session: target, turn: ours)
            }
        }
        for thread in threads {
            events += mapper.reconcile(scope: nil, thread: thread)
        }
        var actions = emit(events.stamped(at: time))
        if configuration.hasPrompt, !prompt.posted, !filter.isDone { actions.append(.postPrompt) }
        return actions
    }

    // MARK: send --follow

    mutating func postingPrompt() {
        prompt.posting()
        filter.promptWasSent()
    }

    mutating func promptSent(turn: String?, at time: Double) -> [Action] {
        filter.promptWasSent(turn: turn)
        // The turn made the thread's rollout: now the connection can subscribe, and the resync
        // reads what the turn did before that.
        let resubscribe: [Action] = targetAwaitsRollout ? [.resync] : []
        targetAwaitsRollout = false
        guard let turn, let target = configuration.target else { return resubscribe }
        return emit(mapper.started(session: target, turn: turn).stamped(at: time)) + resubscribe
    }

    private mutating func emit(_ events: [Event]) -> [Action] {
        let kept = filter.admit(events)
        var actions: [Action] = kept.isEmpty ? [] : [.emit(kept)]
        if filter.isDone { actions.append(.finish) }
        return actions
    }
}
