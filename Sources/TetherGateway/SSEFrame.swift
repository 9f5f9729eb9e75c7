import NIOCore

/// The bytes of `GET /v1/events`, framed as the WHATWG EventSource parser reads them.
public enum SSEFrame {
    /// One event: `id: SEQ` and one `data:` line (a JSON line never holds a newline). No `event:`
    /// field, so a browser's `onmessage` sees every event.
    public static func event(_ event: LoggedEvent) -> String {
        "id: \(event.seq)\ndata: \(event.line)\n\n"
    }

    /// `event(_:)` as bytes, written without a copy to every client it goes to.
    public static func buffer(_ event: LoggedEvent) -> ByteBuffer {
        ByteBuffer(string: Self.event(event))
    }

    /// A block with only an id: it dispatches nothing but sets the client's last event id.
    public static func cursor(_ seq: Int64) -> String {
        "id: \(seq)\n\n"
    }

    /// A comment; proxies and clients see traffic, `EventSource` ignores it.
    public static let heartbeat = ": heartbeat\n\n"

    /// Tells an `EventSource` how long to wait before reconnecting, in milliseconds.
    public static func retry(milliseconds: Int) -> String {
        "retry: \(milliseconds)\n\n"
    }
}
