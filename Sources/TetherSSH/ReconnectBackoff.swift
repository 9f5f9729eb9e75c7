/// Delays between attempts to re-establish a lost SSH session: 1, 2, 5, 10, then 30 s for good.
struct ReconnectBackoff {
    static let schedule = [1, 2, 5, 10, 30]

    private(set) var attempt = 0

    /// Seconds to wait before the next attempt.
    mutating func next() -> Int {
        defer { attempt += 1 }
        return Self.schedule[min(attempt, Self.schedule.count - 1)]
    }

    mutating func reset() { attempt = 0 }
}
