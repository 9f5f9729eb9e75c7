import TetherCore

/// One event as the log holds it: its `seq` and its schema-v1 JSON line (no trailing newline),
/// plus the few fields the API filters on, so a filter never re-parses the line.
public struct LoggedEvent: Sendable, Equatable {
    public let seq: Int64
    public let type: String
    public let profile: String?
    public let session: String?
    /// The schema-v1 JSON line, without its newline.
    public let line: String

    public init(seq: Int64, type: String, profile: String?, session: String?, line: String) {
        self.seq = seq
        self.type = type
        self.profile = profile
        self.session = session
        self.line = line
    }

    /// The schema-v1 object with a `seq` key added: the long-poll form (`format=json`).
    public var jsonWithSeq: String {
        // The line is an object `{"v":1,…}`: splice `"seq":N,` in after its opening brace.
        "{\"seq\":\(seq)," + line.dropFirst()
    }
}
