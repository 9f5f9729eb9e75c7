import TetherCore

/// An event as either store writes it: its JSON line (without the newline) and its key under
/// the duplicate rule (``EventDedupKey``), prepared before the transaction opens.
struct EventRow: Sendable {
    let event: Event
    let line: String
    let key: String?

    /// `events`, in order.
    static func prepare(_ events: [Event]) -> [EventRow] {
        var codec = EventCodec()
        return events.map { event in
            var bytes = codec.encode(event)
            bytes.removeLast()  // the newline
            return EventRow(event: event, line: String(decoding: bytes, as: UTF8.self), key: EventDedupKey.key(for: event))
        }
    }

    /// The row as logged at `seq`.
    func logged(seq: Int64) -> LoggedEvent {
        LoggedEvent(seq: seq, type: event.type.rawValue, profile: event.profile, session: event.session, line: line)
    }
}
