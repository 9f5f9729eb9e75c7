/// One event dispatched from a server-sent event stream, built as the WHATWG HTML standard's
/// "event stream interpretation" builds it.
public struct SSEEvent: Sendable, Equatable {
    /// The last `event` field of the event's block, or `"message"` when the block had none.
    public var type: String
    /// The block's `data` lines joined with LF (the final LF removed).
    public var data: String
    /// The last event ID in force when the event was dispatched; it persists across events
    /// until an `id` field changes it, so a consumer can resume from any event.
    public var id: String
    /// The reconnection time in milliseconds from a valid `retry` field in this event's block.
    public var retry: Int?

    public init(type: String = "message", data: String, id: String = "", retry: Int? = nil) {
        self.type = type
        self.data = data
        self.id = id
        self.retry = retry
    }
}
