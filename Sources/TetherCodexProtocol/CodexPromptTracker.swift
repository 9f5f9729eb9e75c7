import TetherCore
import TetherStreaming

/// `send --follow`'s prompt across reconnects, for the backends that resync a Codex thread by
/// reading its turns (codex, CodexMonitor). The prompt is sent once, even when the link drops
/// before its answer (the turn's id) arrives, unless a resync shows it never reached the server;
/// and a turn that started for it meanwhile is recognised as the first one the thread did not
/// have before the prompt.
public struct CodexPromptTracker: Sendable, Equatable {
    /// The prompt went out (or began to).
    public private(set) var posted = false
    /// The target thread's turns as the last resync read them (nil: not read yet).
    private var turnsRead: Set<String>?
    /// The target thread's turns from before the prompt.
    private var turnsBefore: Set<String>?

    public init() {}

    /// What a resync's read of the target thread says of the prompt.
    public enum Finding: Sendable, Equatable {
        /// Nothing to do: no prompt, its turn already known, or it may still start.
        case nothing
        /// This turn is the prompt's.
        case turn(String)
        /// No turn came of it and the thread is idle: it was lost with the link before the
        /// server read it, and goes out again.
        case lost
    }

    /// The target thread as a resync read it: its turns' ids and its `status`. `turnKnown`: the
    /// prompt's turn is already known (its answer came).
    public mutating func read(turns: [String], status: JSONValue?, turnKnown: Bool) -> Finding {
        turnsRead = Set(turns)
        guard posted, !turnKnown, let before = turnsBefore else { return .nothing }
        if let ours = turns.first(where: { !before.contains($0) }) { return .turn(ours) }
        guard CodexThread.status(status) == .idle else { return .nothing }
        posted = false
        return .lost
    }

    /// The prompt is about to be sent: from now on a new turn of the target may be its turn.
    public mutating func posting() {
        posted = true
        turnsBefore = turnsRead
    }
}
