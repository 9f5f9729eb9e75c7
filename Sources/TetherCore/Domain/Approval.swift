import TetherStreaming

/// A request from the agent for the user's permission. `id` is self-contained: a later, separate
/// `tether approve ID` must be able to answer it with nothing else.
public struct Approval: Sendable, Equatable {
    public enum Kind: String, Sendable { case command, fileChange = "file_change", permission, question }
    public enum Risk: String, Sendable, Comparable {
        case low, medium, high
        public static func < (lhs: Risk, rhs: Risk) -> Bool { lhs.order < rhs.order }
        private var order: Int { self == .low ? 0 : self == .medium ? 1 : 2 }
    }

    public var id: String
    public var session: String?
    public var turn: String?
    public var kind: Kind
    public var title: String?
    public var command: String?
    public var cwd: String?
    public var reason: String?
    public var patterns: [String]
    public var changes: [JSONValue]
    public var options: [Decision]
    public var risk: Risk
    public var extra: JSONObject

    public init(id: String, session: String? = nil, turn: String? = nil, kind: Kind, title: String? = nil,
                command: String? = nil, cwd: String? = nil, reason: String? = nil, patterns: [String] = [],
                changes: [JSONValue] = [], options: [Decision], risk: Risk, extra: JSONObject = [:]) {
        self.id = id
        self.session = session
        self.turn = turn
        self.kind = kind
        self.title = title
        self.command = command
        self.cwd = cwd
        self.reason = reason
        self.patterns = patterns
        self.changes = changes
        self.options = options
        self.risk = risk
        self.extra = extra
    }

    /// The `data` of an `approval.requested` event.
    public var json: JSONValue {
        var object = JSONObject.compact([
            "id": .string(id), "session": JSONValue(session), "turn": JSONValue(turn),
            "kind": .string(kind.rawValue), "title": JSONValue(title), "command": JSONValue(command),
            "cwd": JSONValue(cwd), "reason": JSONValue(reason),
        ])
        if !patterns.isEmpty { object["patterns"] = JSONValue(patterns) }
        if !changes.isEmpty { object["changes"] = .array(changes) }
        object["options"] = JSONValue(options.map(\.rawValue))
        object["risk"] = .string(risk.rawValue)
        for entry in extra { object[entry.key] = entry.value }
        return .object(object)
    }
}

extension Approval {
    /// The keys `json` writes from the typed fields; any other key is `extra`.
    private static let typedKeys: Set<String> = ["id", "session", "turn", "kind", "title", "command", "cwd", "reason",
                                                 "patterns", "changes", "options", "risk"]

    /// An approval read back from the `data` of an `approval.requested` event (what `json`
    /// writes, e.g. as another gateway logged it); nil without an id or a known kind.
    public init?(json data: JSONObject) {
        guard let id = data["id"]?.string, !id.isEmpty,
              let kind = data["kind"]?.string.flatMap(Kind.init(rawValue:)) else { return nil }
        var extra: JSONObject = [:]
        for entry in data where !Self.typedKeys.contains(entry.key) { extra[entry.key] = entry.value }
        self.init(id: id, session: data["session"]?.string, turn: data["turn"]?.string, kind: kind,
                  title: data["title"]?.string, command: data["command"]?.string, cwd: data["cwd"]?.string,
                  reason: data["reason"]?.string, patterns: data["patterns"]?.array?.compactMap(\.string) ?? [],
                  changes: data["changes"]?.array ?? [],
                  options: data["options"]?.array?.compactMap { $0.string.flatMap(Decision.init(rawValue:)) } ?? [],
                  risk: data["risk"]?.string.flatMap(Risk.init(rawValue:)) ?? .medium, extra: extra)
    }
}
