import Foundation

/// One raw write of a scripted SSE response: bytes sent as one socket write, after an optional delay.
///
/// Consecutive chunks without a delay may reach the client in one read (TCP coalesces); give a chunk
/// a delay (a few milliseconds) when a test needs the client to see the split.
public struct SSEScriptChunk: Sendable, Equatable, ExpressibleByStringLiteral {
    public var bytes: [UInt8]
    /// Waited before this chunk is written.
    public var delay: Duration

    public init(bytes: [UInt8], delay: Duration = .zero) {
        self.bytes = bytes
        self.delay = delay
    }

    public init(_ text: String, delay: Duration = .zero) {
        self.init(bytes: Array(text.utf8), delay: delay)
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// A pause with no bytes (e.g. before the server closes).
    public static func pause(_ delay: Duration) -> SSEScriptChunk {
        SSEScriptChunk(bytes: [], delay: delay)
    }

    /// The UTF-8 byte order mark, which an SSE decoder must strip once at the start of the stream.
    public static let byteOrderMark = SSEScriptChunk(bytes: [0xEF, 0xBB, 0xBF])
}
