import TetherStreaming

/// Typed constructors for each event type, so the `data` of a type has one shape everywhere.
extension Event {
    public enum ConnectionState: String, Sendable {
        case connecting, connected, reconnecting, disconnected, failed
    }

    public static func connection(_ state: ConnectionState, attempt: Int? = nil, endpoint: String? = nil,
                                  reason: String? = nil) -> Event {
        Event(.connectionState, data: .compact([
            "state": .string(state.rawValue), "attempt": JSONValue(attempt), "endpoint": JSONValue(endpoint),
            "reason": JSONValue(reason),
        ]))
    }

    public static func session(_ type: EventType, _ session: Session, raw: JSONValue? = nil) -> Event {
        Event(type, session: session.id, data: session.json.object ?? [:], raw: raw)
    }

    public static func sessionStatus(_ session: String, _ status: SessionStatus, attempt: Int? = nil,
                                     message: String? = nil, raw: JSONValue? = nil) -> Event {
        Event(.sessionStatus, session: session, data: .compact([
            "status": .string(status.rawValue), "attempt": JSONValue(attempt), "message": JSONValue(message),
        ]), raw: raw)
    }

    public static func turnStarted(session: String?, turn: String, cursor: String? = nil,
                                   data: JSONObject = [:], raw: JSONValue? = nil) -> Event {
        Event(.turnStarted, session: session, turn: turn, cursor: cursor, data: data, raw: raw)
    }

    public static func turnCompleted(session: String?, turn: String, outcome: TurnOutcome, error: String? = nil,
                                     usage: Usage? = nil, cursor: String? = nil, raw: JSONValue? = nil) -> Event {
        var data = JSONObject.compact(["status": .string(outcome.rawValue), "error": JSONValue(error)])
        if let usage { data["usage"] = usage.json }
        return Event(.turnCompleted, session: session, turn: turn, cursor: cursor, data: data, raw: raw)
    }

    /// `part.started` / `part.completed`: `content` is the part's full state (for `completed`,
    /// the authoritative final content: a consumer reading only these gets every message whole).
    /// `content` with `kind` put first: in place when the caller hands over content of its own
    /// (built for this event) with room for it.
    public static func part(_ type: EventType, session: String?, turn: String?, part: String, kind: PartKind,
                            content: consuming JSONObject, cursor: String? = nil, raw: JSONValue? = nil) -> Event {
        var data = content
        data.setFirst("kind", .string(kind.rawValue))
        return Event(type, session: session, turn: turn, part: part, cursor: cursor, data: data, raw: raw)
    }

    public static func partDelta(session: String?, turn: String?, part: String, kind: PartKind,
                                 field: String = "text", delta: String, cursor: String? = nil,
                                 raw: JSONValue? = nil) -> Event {
        Event(.partDelta, session: session, turn: turn, part: part, cursor: cursor, data: JSONObject([
            (key: "kind", value: .string(kind.rawValue)), (key: "field", value: .string(field)),
            (key: "delta", value: .string(delta)),
        ]), raw: raw)
    }

    public static func partRemoved(session: String?, turn: String?, part: String, raw: JSONValue? = nil) -> Event {
        Event(.partRemoved, session: session, turn: turn, part: part, raw: raw)
    }

    public static func approvalRequested(_ approval: Approval, cursor: String? = nil, raw: JSONValue? = nil) -> Event {
        Event(.approvalRequested, session: approval.session, turn: approval.turn, cursor: cursor,
              data: approval.json.object ?? [:], raw: raw)
    }

    public static func approvalResolved(id: String, session: String?, turn: String?, decision: String,
                                        cursor: String? = nil, raw: JSONValue? = nil) -> Event {
        Event(.approvalResolved, session: session, turn: turn, cursor: cursor,
              data: ["id": .string(id), "decision": .string(decision)], raw: raw)
    }

    /// `plan.updated`: `steps` are `{step, status}` objects (status pending | in_progress | completed).
    public static func planUpdated(session: String?, turn: String?, steps: [JSONValue], explanation: String? = nil,
                                   cursor: String? = nil, raw: JSONValue? = nil) -> Event {
        Event(.planUpdated, session: session, turn: turn, cursor: cursor,
              data: .compact(["steps": .array(steps), "explanation": JSONValue(explanation)]), raw: raw)
    }

    public static func usageUpdated(session: String?, turn: String?, usage: Usage, cursor: String? = nil,
                                    raw: JSONValue? = nil) -> Event {
        Event(.usageUpdated, session: session, turn: turn, cursor: cursor, data: usage.json.object ?? [:], raw: raw)
    }

    public static func notificationReceived(_ notification: Notification, raw: JSONValue? = nil) -> Event {
        Event(.notificationReceived, data: notification.json.object ?? [:], raw: raw)
    }

    public static func error(_ error: TetherError, session: String? = nil, turn: String? = nil,
                             raw: JSONValue? = nil) -> Event {
        Event(.error, session: session, turn: turn, data: .compact([
            "code": .string(error.code.rawValue), "message": .string(error.message),
            "hint": JSONValue(error.hint), "retryable": .bool(error.retryable),
        ]), raw: raw)
    }
}

/// Token usage and cost. Each report replaces the previous one (never sum them).
public struct Usage: Sendable, Equatable {
    public var inputTokens: Int?
    public var outputTokens: Int?
    public var reasoningTokens: Int?
    public var cacheReadTokens: Int?
    public var cacheWriteTokens: Int?
    public var cost: Double?
    public var contextWindow: Int?

    public init(inputTokens: Int? = nil, outputTokens: Int? = nil, reasoningTokens: Int? = nil,
                cacheReadTokens: Int? = nil, cacheWriteTokens: Int? = nil, cost: Double? = nil,
                contextWindow: Int? = nil) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.reasoningTokens = reasoningTokens
        self.cacheReadTokens = cacheReadTokens
        self.cacheWriteTokens = cacheWriteTokens
        self.cost = cost
        self.contextWindow = contextWindow
    }

    public var json: JSONValue {
        .object(.compact([
            "input_tokens": JSONValue(inputTokens), "output_tokens": JSONValue(outputTokens),
            "reasoning_tokens": JSONValue(reasoningTokens), "cache_read_tokens": JSONValue(cacheReadTokens),
            "cache_write_tokens": JSONValue(cacheWriteTokens), "cost": JSONValue(cost),
            "context_window": JSONValue(contextWindow),
        ]))
    }
}
