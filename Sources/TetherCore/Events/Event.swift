import Foundation

/// One line of the normalized stream (schema v1). Adapters fill `type`, the ids, `cursor`,
/// `data` and `raw`; the CLI stamps `profile` and `backend` before writing.
public struct Event: Sendable, Equatable {
    public static let schemaVersion = 1

    public var type: EventType
    /// Gateway receive time, epoch milliseconds.
    public var ts: Double
    public var profile: String?
    public var backend: BackendKind?
    public var session: String?
    public var turn: String?
    public var part: String?
    /// Opaque resume token, present when the backend can resume from this point.
    public var cursor: String?
    public var data: JSONObject
    /// The original wire message; only written with `--raw`.
    public var raw: JSONValue?

    public init(_ type: EventType, session: String? = nil, turn: String? = nil, part: String? = nil,
                cursor: String? = nil, data: JSONObject = [:], raw: JSONValue? = nil, ts: Double = Event.now()) {
        self.type = type
        self.ts = ts
        self.session = session
        self.turn = turn
        self.part = part
        self.cursor = cursor
        self.data = data
        self.raw = raw
    }

    public static func now() -> Double {
        (Date().timeIntervalSince1970 * 1000).rounded()
    }
}

extension Array where Element == Event {
    /// The events with their receive time set to `time` (epoch milliseconds): what a stream's
    /// machine does to what it read, since it is handed the time rather than reading a clock.
    public func stamped(at time: Double) -> [Event] {
        map { event in
            var event = event
            event.ts = time
            return event
        }
    }
}
