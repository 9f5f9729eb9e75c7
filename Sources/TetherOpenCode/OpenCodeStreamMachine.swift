import TetherCore
import TetherNet
import TetherStreaming

/// The OpenCode stream's protocol rules, as a pure state machine in the shape async-http-client
/// gives its own: what happened goes in — a stream element, a REST snapshot, the time it arrived
/// — and what to do comes out as actions. `OpenCodeEventStream` (the I/O loop) only executes
/// them, so every rule here is tested from recorded frames and snapshots, without a socket.
///
/// The rules: OpenCode has no replay, so every `server.connected` is followed by a REST resync;
/// a session going idle with parts still open is first reconciled from REST (its final
/// snapshots); a connection that heartbeats but stays silent while something is busy is polled
/// (OpenCode #46733); `send --follow` posts its prompt only once subscribed and resynced, so
/// nothing of its turn is missed, and posts it again after a POST that failed, unless the next
/// resync shows that it reached the server after all (a user message that was not there before).
struct OpenCodeStreamMachine {
    enum Action: Sendable {
        /// Events for the consumer, already filtered, in order.
        case emit([Event])
        /// Read the REST snapshot (`OpenCodeSnapshot`: statuses, the messages of the sessions
        /// `sessionsToRead` names, pending permissions) and feed it to `resynced`.
        case resync
        /// Read `session`'s messages and feed them to `reconciled`, which then maps `wire`.
        case reconcile(session: String, then: OpenCodeWireEvent)
        /// `send --follow`: read the session's messages and feed the user messages to
        /// `postingPrompt`; post the prompt if it says so, and say `promptPosted` once the POST
        /// succeeded.
        case postPrompt
        /// Say (at `-v`) which API generation the server speaks; it is new or changed.
        case noteGeneration(OpenCodeAPIGeneration, sessionStatusListed: Bool)
        /// Say (at `-v`) that a busy stream went silent and is being polled.
        case notePolling
        /// Say once (on stderr, always) that a memory bound was reached: what was let go of.
        case noteBoundReached(String)
        /// `send --follow` is done: its turn completed.
        case finish
    }

    struct Configuration: Sendable {
        /// The profile's directory: only events of that project (all when nil).
        var directory: String?
        /// Connected, heartbeating, silent while busy for this long: poll REST.
        var pollInterval: Duration
        /// Where the link goes (for `connection.state`).
        var endpoint: String
        /// `send --follow` has a prompt to post once subscribed.
        var hasPrompt: Bool
        /// The session the prompt goes to.
        var promptSession: String?
    }

    private(set) var mapper = OpenCodeEventMapper()
    private var filter: EventFilter
    private let configuration: Configuration
    private var lastActivity: Double = 0
    /// `send --follow`: the session's user messages from before the prompt was first posted.
    private var knownUserMessages: Set<String>?
    /// `send --follow`: where the prompt's POST stands.
    private var prompt = PromptDelivery.notPosted
    private var generation: OpenCodeAPIGeneration?
    /// The stream has connected at least once (an endpoint that 404s later is not "missing").
    private(set) var connectedOnce = false
    /// A bound of the mapper's was reached and said so (once per run).
    private var boundReported = false

    init(request: EventsRequest, configuration: Configuration, contextWindows: [String: Int] = [:]) {
        filter = EventFilter(request)
        self.configuration = configuration
        mapper.contextWindows = contextWindows
    }

    var isDone: Bool { filter.isDone }
    private var request: (session: String?, awaitingPrompt: Bool) {
        (filter.session, filter.untilTurnCompletes && filter.promptSent && filter.targetTurn == nil)
    }

    // MARK: Stream elements

    /// One element of the SSE stream, received at `time` (epoch milliseconds).
    mutating func receive(_ element: EventSource.Element, at time: Double) -> [Action] {
        switch element {
        case .connecting(let attempt):
            return emit([.connection(attempt == 1 ? .connecting : .reconnecting, attempt: attempt, endpoint: configuration.endpoint)])
        case .open:
            connectedOnce = true
            return emit([.connection(.connected, endpoint: configuration.endpoint)])
        case .disconnected(let reason, let retryIn, let attempt):
            return emit([.connection(.reconnecting, attempt: attempt,
                                     reason: (reason?.detail ?? "the server closed the stream") + "; retrying in \(retryIn.secondsText)")])
        case .comment:
            return []
        case .event:
            return []  // decoded by the loop (it logs what cannot be read): see `receive(_ wire:)`
        }
    }

    /// One decoded wire event, received at `time` (epoch milliseconds).
    mutating func receive(_ wire: OpenCodeWireEvent, at time: Double) -> [Action] {
        // A part read straight from its bytes is a part frame: its type needs no comparing.
        if wire.isParsed {
            switch wire.type {
            case "server.connected":
                // Nothing is replayed: read what was missed over REST, then go on live.
                return [.resync]
            case "server.heartbeat":
                return pollIfSilent(at: time)
            default:
                break
            }
        }
        if isOtherProject(wire) { return [] }
        lastActivity = time
        if Self.isIdle(wire), let session = wire.properties["sessionID"]?.string, mapper.hasOpenParts(session: session) {
            // Complete the turn's parts from the authoritative REST copy before closing it.
            return [.reconcile(session: session, then: wire)]
        }
        return map(wire, at: time)
    }

    /// A part frame (read straight from its bytes, `OpenCodeHotFrame`: never a connection,
    /// heartbeat or idle), as `receive(_:at:)` takes it, for a loop that gathers a batch's events
    /// in one array: its events, filtered, are appended to `events`, and what else to do (say a
    /// bound was reached, finish) is returned, to be done after them. A busy stream is mostly such
    /// frames, and for them neither the mapper nor this makes an array of its own. nil: not a
    /// part frame (nothing done); `receive(_:at:)` takes it.
    mutating func receivePart(_ wire: OpenCodeWireEvent, at time: Double, into events: inout [Event]) -> [Action]? {
        guard !wire.isParsed else { return nil }
        if isOtherProject(wire) { return [] }
        lastActivity = time
        let start = events.count
        mapper.map(wire, into: &events)
        stamp(&events, from: start, wire, at: time)
        filter.admit(&events, from: start)
        return followUps()
    }

    /// `session`'s messages for a `.reconcile` (nil: the session is gone), then its wire event.
    mutating func reconciled(session: String, messages: [JSONValue]?, then wire: OpenCodeWireEvent, at time: Double) -> [Action] {
        var events: [Event] = []
        if let messages { events = mapper.reconcile(session: session, messages: messages, busy: true) }
        return emit(events) + map(wire, at: time)
    }

    // MARK: REST snapshots

    /// The sessions whose messages a resync reads, given `GET /session/status` (nil when the
    /// server lists no statuses): the busy ones, those with a turn held open, and the session
    /// a just-posted prompt went to; narrowed to `--session`.
    func sessionsToRead(statuses: JSONObject?) -> [String] {
        var sessions = Set(statuses.map { Array($0.keys) } ?? []).union(mapper.sessionsWithOpenTurns)
        if request.awaitingPrompt, let promptSession = configuration.promptSession { sessions.insert(promptSession) }
        if let only = request.session {
            // Without a status list, the one session asked for is looked at every time.
            sessions = statuses == nil ? [only] : sessions.intersection([only])
        }
        return sessions.sorted()
    }

    /// A resync's reads, all done before any is mapped (a resync that failed halfway must
    /// leave the mapper untouched, or the next one would skip what was never sent).
    mutating func resynced(_ snapshot: OpenCodeSnapshot, at time: Double) -> [Action] {
        var actions: [Action] = []
        let found = OpenCodeAPIGeneration(permissionList: snapshot.permissions)
        if generation != found {
            generation = found
            actions.append(.noteGeneration(found, sessionStatusListed: snapshot.statuses != nil))
        }
        let awaited = request.awaitingPrompt ? configuration.promptSession : nil
        var events: [Event] = []
        var busySessions: Set<String> = []
        for (session, messages) in snapshot.messages {
            let busy = snapshot.statuses.map { OpenCodeBackend.status($0[session]) != .idle }
                ?? OpenCodeEventMapper.lastTurnIsRunning(messages)
            if busy { busySessions.insert(session) }
            events += mapper.reconcile(session: session, messages: messages, busy: busy,
                                       adoptingAnyUserMessageBut: session == awaited ? knownUserMessages : nil)
        }
        let scope = request.session.map { Set([$0]) }
        if let permissions = snapshot.permissions {
            events += mapper.reconcile(permissions: permissions.array ?? [], sessions: scope)
        } else {
            mapper.reconcileStreamedPermissions(messages: Dictionary(snapshot.messages, uniquingKeysWith: { first, _ in first }),
                                                busy: busySessions, sessions: scope)
        }
        if let questions = snapshot.questions {
            events += mapper.reconcile(questions: questions.array ?? [], sessions: scope)
        }
        actions += emit(events.stamped(at: time))
        if configuration.hasPrompt, !filter.isDone {
            switch prompt {
            case .notPosted:
                actions.append(.postPrompt)
            case .unconfirmed:
                // The POST failed (refused, timed out, 5xx) and the link was rebuilt. It may have
                // reached the server all the same (a timeout after the prompt was stored): only a
                // new user message says so. Without one it is posted again, never twice.
                let session = snapshot.messages.first { $0.session == configuration.promptSession }
                if let session, arrived(userMessages: Self.userMessages(session.messages)) {
                    prompt = .delivered
                } else {
                    actions.append(.postPrompt)
                }
            case .delivered:
                break
            }
        }
        return actions
    }

    /// The prompt is about to be posted; `userMessages`: the session's user messages now. The
    /// first time they are kept, so a turn that comes and goes unseen is still recognised as
    /// ours. Returns whether to post: false when a POST that failed reached the server after all
    /// (it was stored after the resync's read and before this one).
    mutating func postingPrompt(userMessages: Set<String>) -> Bool {
        if knownUserMessages == nil { knownUserMessages = userMessages }
        if arrived(userMessages: userMessages) {
            prompt = .delivered
            return false
        }
        prompt = .unconfirmed
        filter.promptWasSent()
        return true
    }

    /// The prompt's POST succeeded: it is never posted again.
    mutating func promptPosted() {
        prompt = .delivered
    }

    /// The user messages' ids among `messages` (a session's, as `GET /session/{id}/message` lists them).
    static func userMessages(_ messages: [JSONValue]) -> Set<String> {
        Set(messages.filter { $0["info"]?["role"]?.string == "user" }.compactMap { $0["info"]?["id"]?.string })
    }

    /// Whether `userMessages` hold one that was not there before the prompt was first posted.
    private func arrived(userMessages: Set<String>) -> Bool {
        guard let known = knownUserMessages, prompt == .unconfirmed else { return false }
        return !userMessages.isSubset(of: known)
    }

    // MARK: Rules

    /// Connected, heartbeating, yet silent while a session is busy (or our prompt's turn has not
    /// shown up yet): poll REST rather than trust the silence.
    private mutating func pollIfSilent(at time: Double) -> [Action] {
        let awaitingOurTurn = filter.untilTurnCompletes && filter.promptSent && !filter.isDone
        let busy = awaitingOurTurn || !mapper.sessionsWithOpenTurns.isEmpty || mapper.statuses.contains { $0.value != .idle }
        guard busy, time - lastActivity >= configuration.pollInterval.inSeconds * 1000 else { return [] }
        lastActivity = time
        return [.notePolling, .resync]
    }

    private mutating func map(_ wire: OpenCodeWireEvent, at time: Double) -> [Action] {
        var events = mapper.map(wire)
        stamp(&events, from: 0, wire, at: time)
        return emit(events)
    }

    /// The events mapped from `wire`, from `start` on: received at `time`, and `raw` its.
    private func stamp(_ events: inout [Event], from start: Int, _ wire: OpenCodeWireEvent, at time: Double) {
        for index in start..<events.count {
            if events[index].raw == nil { events[index].raw = wire.raw }
            events[index].ts = time
        }
    }

    /// Whether `wire` belongs to another project than the profile's directory.
    private func isOtherProject(_ wire: OpenCodeWireEvent) -> Bool {
        guard let directory = configuration.directory, let eventDirectory = wire.directory else { return false }
        return eventDirectory != "global" && eventDirectory != directory
    }

    private mutating func emit(_ events: [Event]) -> [Action] {
        let kept = filter.admit(events)
        var actions: [Action] = kept.isEmpty ? [] : [.emit(kept)]
        actions += followUps()
        return actions
    }

    /// What follows emitted events: a bound reached, said once; the end, once the filter is done.
    private mutating func followUps() -> [Action] {
        var actions: [Action] = []
        if !boundReported, mapper.releasedState > 0 || mapper.textNotAssembled > 0 {
            boundReported = true
            actions.append(.noteBoundReached(
                "more parts, messages or sessions are open at once, or more text streams into open parts, than Tether keeps "
                + "(\(OpenCodeEventMapper.openPartLimit) parts; \(OpenCodeEventMapper.partTextLimit >> 20) MiB of text a part, "
                + "\(OpenCodeEventMapper.assembledTextBudget >> 20) MiB in all): the oldest open ones are let go of and text past "
                + "those limits is not kept; every delta still streams and a final snapshot still completes a part, but without "
                + "one a part let go of is not completed, and a part whose text was cut completes with the text kept"))
        }
        if filter.isDone { actions.append(.finish) }
        return actions
    }

    private static func isIdle(_ wire: OpenCodeWireEvent) -> Bool {
        guard wire.isParsed else { return false }
        return wire.type == "session.idle" || (wire.type == "session.status" && wire.properties["status"]?["type"]?.string == "idle")
    }
}

/// Where `send --follow`'s prompt stands.
enum PromptDelivery: Sendable {
    /// Not posted yet.
    case notPosted
    /// A POST went out and did not succeed (or has not yet): the server may or may not have it.
    case unconfirmed
    /// The POST succeeded, or a resync showed the prompt arrived.
    case delivered
}

/// What a resync reads over REST, before any of it is mapped. nil members: the server has no
/// such route (`GET /session/status` or `GET /permission`; see `OpenCodeClient.getIfServed`).
struct OpenCodeSnapshot: Sendable {
    var statuses: JSONObject?
    /// Each session read, with its messages oldest first (sessions that are gone are left out).
    var messages: [(session: String, messages: [JSONValue])]
    var permissions: JSONValue?
    /// `GET /question` (nil: a server without questions).
    var questions: JSONValue? = nil
}
