/// What an `events` request (or `send --follow`) lets through, and when it is done: one
/// definition for every adapter's stream.
///
/// - The link's state, and errors of the stream itself (no session), always pass.
/// - `--session` keeps that session's events; `--turn` that turn's.
/// - `untilTurnCompletes` (`send --follow`): the stream keeps to the turn its prompt started —
///   the one the backend named when the prompt was sent, else the first `turn.started` after
///   it — plus the session's status lines, and is done at that turn's `turn.completed`.
public struct EventFilter: Sendable {
    public let session: String?
    public let turn: String?
    public let untilTurnCompletes: Bool
    /// The turn `send --follow` is following, once known.
    public private(set) var targetTurn: String?
    /// Whether the prompt has been sent (only turns that start after it are ours).
    public private(set) var promptSent = false
    /// `send --follow` saw its turn complete: nothing more is wanted.
    public private(set) var isDone = false

    public init(_ request: EventsRequest) {
        session = request.session
        turn = request.turn
        untilTurnCompletes = request.untilTurnCompletes
    }

    public init(session: String?, turn: String? = nil, untilTurnCompletes: Bool = false) {
        self.session = session
        self.turn = turn
        self.untilTurnCompletes = untilTurnCompletes
    }

    /// The prompt went out; `turn` is its turn's id when the backend said it at once.
    public mutating func promptWasSent(turn: String? = nil) {
        promptSent = true
        if let turn { targetTurn = turn }
    }

    /// Whether `event` goes out. Records the target turn and the end as they pass.
    public mutating func admit(_ event: Event) -> Bool {
        guard !isDone else { return false }
        if event.type == .connectionState || (event.type == .error && event.session == nil) { return true }
        if let session, event.session != session { return false }
        if untilTurnCompletes {
            if targetTurn == nil, promptSent, event.type == .turnStarted { targetTurn = event.turn }
            guard let targetTurn else { return false }
            guard event.turn == targetTurn || (event.turn == nil && event.type == .sessionStatus) else { return false }
            if event.type == .turnCompleted { isDone = true }
            return true
        }
        if let turn, event.turn != turn { return false }
        return true
    }

    /// `events` admitted, in order, up to and including the one that completes the turn.
    /// The array itself when all pass (the common case: no copy).
    public mutating func admit(_ events: [Event]) -> [Event] {
        var kept: [Event]?
        for index in events.indices {
            let admitted = admit(events[index])
            if kept == nil, !admitted {
                kept = Array(events[..<index])
            } else if admitted {
                kept?.append(events[index])
            }
        }
        return kept ?? events
    }

    /// `events` from `start` on admitted in place: those that do not pass are taken out, the
    /// rest keep their order (for a loop that gathers a batch's events in one array).
    public mutating func admit(_ events: inout [Event], from start: Int) {
        var kept = start
        for index in start..<events.count where admit(events[index]) {
            if kept != index { events.swapAt(kept, index) }
            kept += 1
        }
        if kept < events.count { events.removeSubrange(kept...) }
    }
}
