import TetherStreaming

/// A conversation with an agent: an OpenCode session, a Codex thread, a CodexMonitor
/// workspace thread. `id` is the backend's own id (self-contained where it needs several keys).
public struct Session: Sendable, Equatable {
    public var id: String
    public var title: String?
    public var directory: String?
    public var createdAt: Double?   // epoch milliseconds
    public var updatedAt: Double?
    public var status: SessionStatus?
    public var archived: Bool?

    public init(id: String, title: String? = nil, directory: String? = nil, createdAt: Double? = nil,
                updatedAt: Double? = nil, status: SessionStatus? = nil, archived: Bool? = nil) {
        self.id = id
        self.title = title
        self.directory = directory
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.status = status
        self.archived = archived
    }

    public var json: JSONValue {
        .object(.compact([
            "id": .string(id), "title": JSONValue(title), "directory": JSONValue(directory),
            "created_at": JSONValue(createdAt), "updated_at": JSONValue(updatedAt),
            "status": JSONValue(status?.rawValue), "archived": JSONValue(archived),
        ]))
    }
}

public enum SessionStatus: String, Sendable, CaseIterable {
    case idle, busy
    case waitingApproval = "waiting_approval"
    case retrying, error
}

/// How a turn ended.
public enum TurnOutcome: String, Sendable, CaseIterable {
    case completed, failed, cancelled
}

extension Session {
    /// A session read back from what `json` writes (e.g. another gateway's API); nil without an id.
    public init?(json value: JSONValue) {
        guard let id = value["id"]?.string, !id.isEmpty else { return nil }
        self.init(id: id, title: value["title"]?.string, directory: value["directory"]?.string,
                  createdAt: value["created_at"]?.double, updatedAt: value["updated_at"]?.double,
                  status: value["status"]?.string.flatMap(SessionStatus.init(rawValue:)), archived: value["archived"]?.bool)
    }
}
