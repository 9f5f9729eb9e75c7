import Synchronization

/// Spaces a script's events `interval` apart on average. Each pause sleeps to a deadline that
/// advances by `interval`, so the time spent emitting an event is not added to the pause and an
/// interval under a millisecond keeps its rate (5,000 events a second at 0.2 ms). A script that
/// waited long between events (for an approval) starts a fresh schedule instead of bursting to
/// catch up. A zero interval only yields.
final class Pacer: Sendable {
    /// How far behind the schedule may fall before it starts afresh.
    static let catchUpLimit = Duration.milliseconds(50)

    let interval: Duration
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)

    init(interval: Duration) {
        self.interval = interval
    }

    func pause() async throws {
        guard interval > .zero else {
            await Task.yield()
            try Task.checkCancellation()
            return
        }
        let now = ContinuousClock.now
        let due = deadline.withLock { deadline in
            var due = (deadline ?? now) + interval
            if due < now - Self.catchUpLimit { due = now + interval }
            deadline = due
            return due
        }
        if due > now {
            try await Task.sleep(until: due, tolerance: .zero, clock: .continuous)
        } else {
            await Task.yield()
            try Task.checkCancellation()
        }
    }
}
