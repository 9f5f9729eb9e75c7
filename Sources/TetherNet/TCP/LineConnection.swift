/// A bidirectional stream of text lines: whole lines out, whole lines in. `TCPLineConnection` is
/// the real one; protocol layers (CodexMonitor's JSON-RPC) are written against this so that they
/// can be driven in memory by tests, with no socket.
public protocol LineConnection: Sendable {
    /// Writes `line` and a LF. Returns once the bytes are handed to the kernel; throws `NetError`
    /// when the connection has ended.
    func send(_ line: [UInt8]) async throws

    /// The next line, without its LF (and one CR before it); `nil` once the peer has closed
    /// cleanly or `close()` was called. Throws `NetError` when the connection broke, or a line
    /// exceeded the limit (`.tooLarge`). One reader at a time.
    func receive() async throws -> [UInt8]?

    /// The lines ready now, at least one, oldest first: what `receive()` would return one call
    /// at a time (a connection that reads in chunks hands over one chunk's lines at once). `nil`
    /// and errors as for `receive()`.
    func receiveBatch() async throws -> [[UInt8]]?

    /// Closes both directions at once. Idempotent; a waiting `receive()` returns `nil` and
    /// unsent lines fail.
    func close()
}

extension LineConnection {
    /// One line at a time, for connections with nothing better.
    public func receiveBatch() async throws -> [[UInt8]]? {
        try await receive().map { [$0] }
    }
}
