import TetherCore

/// A stream machine that holds one connection at a time (CodexMonitor's daemon, Codex's
/// app-server): it is told each step of `ReconnectLoop`'s schedule and answers with actions.
public protocol ConnectionStreamMachine {
    associatedtype Action
    var isDone: Bool { get }
    mutating func connecting(attempt: Int, at time: Double) -> [Action]
    mutating func disconnected(reason: String, retryIn: Duration, attempt: Int, at time: Double) -> [Action]
    mutating func gaveUp(reason: String, at time: Double) -> [Action]
}

extension ReconnectLoop {
    /// Runs `machine`'s connections until it is done. Each step of the schedule goes to the
    /// machine, and what it answers is executed (`execute`, with no connection) and handed on
    /// before the wait the step announces (a connect of up to a minute, a backoff), not when the
    /// next one fails. A connection is `open`ed, run until it ends (`live`) and `close`d; when it
    /// fails, what it produced is handed on first. `reconnecting` hears each lost connection.
    public func run<Machine: ConnectionStreamMachine, Connection>(
        _ machine: inout Machine, outbox: EventOutbox, closed: String,
        reconnecting: (_ reason: String, _ attempt: Int) -> Void,
        execute: (_ actions: [Machine.Action], _ machine: inout Machine) async throws -> Void,
        open: () async throws -> Connection,
        close: (Connection) -> Void,
        live: (Connection, _ machine: inout Machine) async throws -> Void
    ) async throws {
        try await run(closed: closed) { step in
            let now = Event.now()
            switch step {
            case .connecting(let attempt):
                try await execute(machine.connecting(attempt: attempt, at: now), &machine)
            case .reconnecting(let reason, let delay, let attempt):
                reconnecting(reason, attempt)
                try await execute(machine.disconnected(reason: reason, retryIn: delay, attempt: attempt, at: now), &machine)
            case .gaveUp(let reason):
                try await execute(machine.gaveUp(reason: reason, at: now), &machine)
            }
            try await outbox.flush()
        } connection: { connected in
            let connection = try await open()
            defer { close(connection) }
            // Open (and authenticated): the other end is up and answering, so the next drop is
            // a fresh failure and the schedule starts over. Counting only connections that
            // brought a message, a quiet peer restarted now and then climbed to the cap.
            connected()
            do {
                try await live(connection, &machine)
            } catch {
                try await outbox.flush()
                throw error
            }
            return machine.isDone
        }
    }
}
