/// One event dispatched from a server-sent event stream, built as the WHATWG HTML standard's
/// "event stream interpretation" builds it.
public struct SSEEvent: Sendable, Equatable {
    /// The last `event` field of the event's block, or `"message"` when the block had none.
    public var type: String
    /// The block's `data` lines joined with LF (the final LF removed), as the bytes that came:
    /// a JSON parser reads them as they are, with no trip through `String` and back.
    public var dataBytes: [UInt8]
    /// The last event ID in force when the event was dispatched; it persists across events
    /// until an `id` field changes it, so a consumer can resume from any event.
    public var id: String
    /// The reconnection time in milliseconds from a valid `retry` field in this event's block.
    public var retry: Int?

    public init(type: String = "message", data: String, id: String = "", retry: Int? = nil) {
        self.init(type: type, dataBytes: Array(data.utf8), id: id, retry: retry)
    }

    public init(type: String = "message", dataBytes: [UInt8], id: String = "", retry: Int? = nil) {
        self.type = type
        self.dataBytes = dataBytes
        self.id = id
        self.retry = retry
    }

    /// The data as text (UTF-8, invalid sequences replaced, as the standard decodes it).
    public var data: String { String(decoding: dataBytes, as: UTF8.self) }
}
