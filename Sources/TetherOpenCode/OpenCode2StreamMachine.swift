import TetherCore
import TetherNet
import TetherStreaming

/// The OpenCode 2.x stream's rules as a pure state machine (the shape of
/// `OpenCodeStreamMachine`): stream elements, log catch-ups and REST reads go in, actions come
/// out; `OpenCode2EventStream` only executes them.
///
/// The rules (protocols/opencode-v2.md §4.4): `GET /api/event` is one volatile stream for every
/// session, with no replay. Each session keeps a durable log whose `seq` orders its persisted
/// events. So after a reconnect (a `server.connected` other than the first), every session that
/// was active — a turn open, the `--session` followed, `send --follow`'s — is caught up from its
/// log after the last `durable.seq` seen, and its pending permissions and forms (live-only) are
/// read again; durable frames the global stream then repeats are dropped by seq (the mapper).
/// A session whose turn began while the link was down is joined (`GET /api/session/active`),
/// and a durable frame of a known session that skips seqs (frames lost on the way) has that
/// session caught up from its log before it is taken.
/// `send --follow` posts its prompt once subscribed, after reading where the session's log
/// ends, and follows the turn named by the prompt's answer (the inbox item's id).
struct OpenCode2StreamMachine {
    enum Action: Sendable {
        case emit([Event])
        /// Read each session's log after `after` to its `log.synced`, and its pending permissions
        /// and forms; feed them to `caughtUp`.
        case catchUp([CatchUp])
        /// `send --follow`: read where the session's log ends (`watermark`), post the prompt,
        /// then say `promptPosted` with the inbox item's id.
        case postPrompt(session: String)
        /// Read which sessions are running now (`GET /api/session/active`), each one's log from
        /// the start and its pending permissions and forms; feed them to `joined`.
        case joinRunning
        /// Say once (at `-v`) that the server speaks the 2.x API.
        case noteGeneration
        /// `send --follow` is done.
        case finish
    }

    struct CatchUp: Sendable, Equatable {
        var session: String
        var after: Int
    }

    struct Configuration: Sendable {
        var endpoint: String
        /// `send --follow`'s session, when there is a prompt to post.
        var promptSession: String?
        /// `--since SEQ` (with `--session`): the first connection catches up from there.
        var since: Int?
    }

    private(set) var mapper = OpenCode2Mapper()
    private var filter: EventFilter
    private let configuration: Configuration
    private(set) var connections = 0
    private var promptPosted = false
    /// `send --follow`: where the session's log ended before the first POST, once read; set,
    /// it also says a POST was attempted (and may have reached the server).
    private(set) var promptWatermark: Int?
    /// A frame that came past a gap in its session's seqs, held while the log is read; mapped
    /// after the catch-up (dropped then if the log had it).
    private var pastGap: OpenCode2WireEvent?
    /// The latest envelope time seen (the server's clock): a reconnect looks for sessions
    /// created since.
    private var lastCreated: Int?
    /// Sessions created while the link was down, to be shown from their log's start.
    private var joinFromStart: Set<String> = []

    init(request: EventsRequest, configuration: Configuration) {
        filter = EventFilter(request)
        self.configuration = configuration
        if let session = request.session, let since = configuration.since { mapper.resume(session: session, after: since) }
    }

    var isDone: Bool { filter.isDone }

    // MARK: Stream elements

    mutating func receive(_ element: EventSource.Element) -> [Action] {
        switch element {
        case .connecting(let attempt):
            return emit([.connection(attempt == 1 ? .connecting : .reconnecting, attempt: attempt, endpoint: configuration.endpoint)])
        case .open:
            return emit([.connection(.connected, endpoint: configuration.endpoint)])
        case .disconnected(let reason, let retryIn, let attempt):
            return emit([.connection(.reconnecting, attempt: attempt,
                                     reason: (reason?.detail ?? "the server closed the stream") + "; retrying in \(retryIn.secondsText)")])
        case .comment, .event:
            return []
        }
    }

    /// A delta read straight from its frame: what `receive(_: OpenCode2WireEvent)` does with the
    /// same frame decoded whole (such a frame is never durable, so no gap rule applies).
    mutating func receive(_ delta: OpenCode2TextDelta) -> [Action] {
        if let created = delta.created { lastCreated = max(lastCreated ?? created, created) }
        return emit(mapper.map(delta))
    }

    mutating func receive(_ wire: OpenCode2WireEvent) -> [Action] {
        guard wire.type == "server.connected" else {
            if let created = wire.created { lastCreated = max(lastCreated ?? created, created) }
            if let session = wire.session, let seq = wire.seq, wire.isDurable, let last = mapper.lastSeq[session],
               OpenCode2Facts.isPastAGap(seq: seq, lastSeen: last) {
                pastGap = wire
                return [.catchUp([CatchUp(session: session, after: last)])]
            }
            return emit(mapper.map(wire))
        }
        connections += 1
        var actions: [Action] = []
        if connections == 1 { actions.append(.noteGeneration) }
        // The prompt first: after a POST that failed, finding it in the log names the turn, and
        // only then may the catch-up map the turn's frames (before, the filter would drop them
        // as no turn of ours, and their seqs would count as taken).
        if let session = configuration.promptSession, !promptPosted { actions.append(.postPrompt(session: session)) }
        if connections == 1 {
            if let session = filter.session, let since = configuration.since {
                actions.append(.catchUp([CatchUp(session: session, after: since)]))
            } else if configuration.promptSession == nil {
                actions.append(.joinRunning)
            }
        } else {
            let sessions = resumable()
            if !sessions.isEmpty { actions.append(.catchUp(sessions)) }
            // A session whose turn began while the link was down is running now, unseen
            // (`send --follow` follows its own session, which the catch-up reads).
            if configuration.promptSession == nil { actions.append(.joinRunning) }
        }
        return actions
    }

    /// Sessions a reconnect resumes, each after its last seq: those with a turn open, the one
    /// followed, `send --follow`'s — where a seq is known (nothing seen: nothing to resume).
    func resumable() -> [CatchUp] {
        var sessions = mapper.activeSessions
        if let session = filter.session { sessions.insert(session) }
        if let session = configuration.promptSession { sessions.insert(session) }
        return sessions.sorted().compactMap { session in mapper.lastSeq[session].map { CatchUp(session: session, after: $0) } }
    }

    // MARK: Results of I/O

    /// A session's log frames after a catch-up, then its pending permissions and forms.
    mutating func caughtUp(session: String, frames: [OpenCode2WireEvent], pending: [JSONValue]) -> [Action] {
        var events: [Event] = []
        for frame in frames where !frame.isSyncedMarker {
            events += mapper.map(frame)
        }
        if let held = pastGap, held.session == session {
            pastGap = nil
            events += mapper.map(held)
        }
        events += mapper.reconcile(pending: pending, sessions: [session])
        return emit(events)
    }

    /// After a reconnect, when the stream saw anything: the server time from which a session
    /// was created while the link was down (`joinRunning` lists those too).
    var createdWhileAway: Int? { connections > 1 ? lastCreated : nil }

    /// Which sessions `joinRunning` reads, each after its last seq seen (0: never seen): those
    /// that run, and those `created` while the link was down (`createdWhileAway`) — the one
    /// followed only, with `--session` — but not those a reconnect's catch-up has just read.
    mutating func sessionsToJoin(running: [String], created: [String] = []) -> [CatchUp] {
        var candidates = running
        for session in created where !candidates.contains(session) { candidates.append(session) }
        if let session = filter.session { candidates = candidates.contains(session) ? [session] : [] }
        let caughtUp = Set(resumable().map(\.session))
        for session in created where mapper.lastSeq[session] == nil { joinFromStart.insert(session) }
        return candidates.filter { !caughtUp.contains($0) }.map { CatchUp(session: $0, after: mapper.lastSeq[$0] ?? 0) }
    }

    /// A joined session's log after its last seq seen. One seen before (a turn began in it
    /// while the link was down), or created while the link was down, shows all of it. One
    /// never seen that was running when the stream first connected shows only the execution
    /// running now (from its last `session.execution.started`); what came before only sets the
    /// mapper's state (its seq, its finished turns).
    mutating func joined(session: String, frames: [OpenCode2WireEvent], pending: [JSONValue]) -> [Action] {
        let frames = frames.filter { !$0.isSyncedMarker }
        guard mapper.lastSeq[session] == nil, joinFromStart.remove(session) == nil else {
            var events = frames.flatMap { mapper.map($0) }
            events += mapper.reconcile(pending: pending, sessions: [session])
            return emit(events)
        }
        let start = frames.lastIndex { $0.type == "session.execution.started" } ?? frames.endIndex
        // Its input's promotion comes just before it: kept, so the turn has its id and text.
        let shown = frames[..<start].lastIndex { $0.type == "session.input.promoted" } ?? start
        for frame in frames[..<shown] { _ = mapper.map(frame) }
        var events: [Event] = []
        for frame in frames[shown...] { events += mapper.map(frame) }
        events += mapper.reconcile(pending: pending, sessions: [session])
        return emit(events)
    }

    /// Where `session`'s log ended before the prompt: frames at or below are not the turn's.
    mutating func watermark(session: String, seq: Int?) {
        guard promptWatermark == nil else { return }
        promptWatermark = seq ?? 0
        if let seq { mapper.resume(session: session, after: seq) }
    }

    /// Before posting again after a POST that failed: the input this prompt already was, when
    /// the session's log admitted one with its text after the watermark (the POST reached the
    /// server and only its answer was lost), so it is not sent twice.
    static func admittedInput(_ frames: [OpenCode2WireEvent], text: String) -> String? {
        frames.first { $0.type == "session.input.admitted" && $0.data["input"]?["text"]?.string == text }?.data["inputID"]?.string
    }

    /// The prompt was admitted as `input` (the inbox item's id, the turn's id).
    mutating func promptWasPosted(input: String?) {
        promptPosted = true
        filter.promptWasSent(turn: input)
    }

    private mutating func emit(_ events: [Event]) -> [Action] {
        let kept = filter.admit(events)
        var actions: [Action] = kept.isEmpty ? [] : [.emit(kept)]
        if filter.isDone { actions.append(.finish) }
        return actions
    }
}
