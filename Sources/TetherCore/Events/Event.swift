import Foundation
import TetherStreaming

/// One line of the normalized stream (schema v1). Adapters fill `type`, the ids, `cursor`,
/// `data` and `raw`; the CLI stamps `profile` and `backend` before writing.
///
/// A value type whose fields sit in the kernel's `CopyOnWrite` box: an event is copied from the
/// mapper into its batch, the channel, the filter and the writer, and a copy is one retain where
/// the fields inline were nine. Without the box, five of eight stream rows ran more than 3 %
/// slower, CodexMonitor's by a quarter (bench/PROFILE.md, "`Event` as a plain struct").
/// The fields are read and set whole: changing `data` in place (`event.data[k] = v`) copies the
/// object first, which only rare paths do (a hint rewritten for display, an approval's answer).
public struct Event: Sendable, Equatable {
    public static let schemaVersion = 1

    private var fields: CopyOnWrite<Fields>

    public init(_ type: EventType, session: String? = nil, turn: String? = nil, part: String? = nil,
                cursor: String? = nil, data: JSONObject = [:], raw: JSONValue? = nil, ts: Double = Event.now()) {
        fields = CopyOnWrite(Fields(type: type, ts: ts, session: session, turn: turn, part: part, cursor: cursor,
                                    data: data, raw: raw))
    }

    /// The wall clock, epoch milliseconds (rounded). Read from the system clock itself rather
    /// than through `Date()`: every event a mapper makes asks (bench/PROFILE.md).
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000).rounded()
    }

    public var type: EventType {
        get { fields.value.type }
        set { fields.value.type = newValue }
    }
    /// Gateway receive time, epoch milliseconds.
    public var ts: Double {
        get { fields.value.ts }
        set { fields.value.ts = newValue }
    }
    public var profile: String? {
        get { fields.value.profile }
        set { fields.value.profile = newValue }
    }
    public var backend: BackendKind? {
        get { fields.value.backend }
        set { fields.value.backend = newValue }
    }
    public var session: String? {
        get { fields.value.session }
        set { fields.value.session = newValue }
    }
    public var turn: String? {
        get { fields.value.turn }
        set { fields.value.turn = newValue }
    }
    public var part: String? {
        get { fields.value.part }
        set { fields.value.part = newValue }
    }
    /// Opaque resume token, present when the backend can resume from this point.
    public var cursor: String? {
        get { fields.value.cursor }
        set { fields.value.cursor = newValue }
    }
    public var data: JSONObject {
        get { fields.value.data }
        set { fields.value.data = newValue }
    }
    /// The original wire message; only written with `--raw`.
    public var raw: JSONValue? {
        get { fields.value.raw }
        set { fields.value.raw = newValue }
    }

    public static func == (lhs: Event, rhs: Event) -> Bool {
        lhs.fields.sharesStorage(with: rhs.fields) || lhs.fields.value == rhs.fields.value
    }

    private struct Fields: Sendable, Equatable {
        var type: EventType
        var ts: Double
        var profile: String?
        var backend: BackendKind?
        var session: String?
        var turn: String?
        var part: String?
        var cursor: String?
        var data: JSONObject
        var raw: JSONValue?
    }
}

extension Array where Element == Event {
    /// The events with their receive time set to `time` (epoch milliseconds): what a stream's
    /// machine does to what it read, since it is handed the time rather than reading a clock.
    /// Stamped in place: each event's box is changed, not copied, when the array alone holds it.
    public consuming func stamped(at time: Double) -> [Event] {
        for index in indices { self[index].ts = time }
        return self
    }
}
