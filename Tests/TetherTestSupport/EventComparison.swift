import TetherCore

extension Array where Element == Event {
    /// The events without their wire message: what a decoder that keeps no `raw` (a hot path
    /// read straight from the bytes) must produce from the same message as one that keeps it.
    public var withoutRaw: [Event] {
        map { event in
            var event = event
            event.raw = nil
            return event
        }
    }
}
