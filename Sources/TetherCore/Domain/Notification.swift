import TetherStreaming

/// A desktop notification (the notification backend).
public struct Notification: Sendable, Equatable {
    public var id: String
    public var title: String
    public var body: String
    public var priority: String?
    public var read: Bool?
    public var createdAt: Double?
    public var extra: JSONObject

    public init(id: String, title: String, body: String, priority: String? = nil, read: Bool? = nil,
                createdAt: Double? = nil, extra: JSONObject = [:]) {
        self.id = id
        self.title = title
        self.body = body
        self.priority = priority
        self.read = read
        self.createdAt = createdAt
        self.extra = extra
    }

    public var json: JSONValue {
        var object = JSONObject.compact([
            "id": .string(id), "title": .string(title), "body": .string(body),
            "priority": JSONValue(priority), "read": JSONValue(read), "created_at": JSONValue(createdAt),
        ])
        for entry in extra where object[entry.key] == nil { object[entry.key] = entry.value }
        return .object(object)
    }
}

extension Notification {
    private static let typedKeys: Set<String> = ["id", "title", "body", "priority", "read", "created_at"]

    /// A notification read back from what `json` writes (e.g. another gateway's API); nil
    /// without an id.
    public init?(json value: JSONValue) {
        guard let id = value["id"]?.string, !id.isEmpty else { return nil }
        var extra: JSONObject = [:]
        for entry in value.object ?? [:] where !Self.typedKeys.contains(entry.key) { extra[entry.key] = entry.value }
        self.init(id: id, title: value["title"]?.string ?? "", body: value["body"]?.string ?? "",
                  priority: value["priority"]?.string, read: value["read"]?.bool, createdAt: value["created_at"]?.double, extra: extra)
    }
}
