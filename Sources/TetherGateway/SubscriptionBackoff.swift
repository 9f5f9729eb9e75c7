/// How long a profile's subscription waits before it starts again after its stream ended:
/// doubling from one second to 30, back to the start once a stream stayed up for a minute.
struct SubscriptionBackoff: Sendable {
    static let first: Duration = .seconds(1)
    static let cap: Duration = .seconds(30)
    static let healthy: Duration = .seconds(60)

    private(set) var next: Duration = Self.first

    /// The delay before the next attempt, given how long the last stream lasted.
    mutating func delay(afterStreamLasting lasted: Duration) -> Duration {
        if lasted >= Self.healthy { next = Self.first }
        let delay = next
        next = min(next * 2, Self.cap)
        return delay
    }
}
