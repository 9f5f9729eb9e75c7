import Foundation

/// One line of the normalized stream (schema v1). Adapters fill `type`, the ids, `cursor`,
/// `data` and `raw`; the CLI stamps `profile` and `backend` before writing.
///
/// A value type kept in one reference-counted box (copy on write): an event is copied from the
/// mapper into its batch, the channel, the filter and the writer, and a copy is one retain where
/// the fields inline were nine, and an array of events moves eight bytes an element, not the
/// 130 of its fields (bench/PROFILE.md, part eight). Without the box, five of eight stream rows
/// ran more than 3 % slower, CodexMonitor's by a quarter (bench/PROFILE.md, "`Event` as a plain
/// struct").
public struct Event: Sendable, Equatable {
    public static let schemaVersion = 1

    private var storage: Storage

    public init(_ type: EventType, session: String? = nil, turn: String? = nil, part: String? = nil,
                cursor: String? = nil, data: JSONObject = [:], raw: JSONValue? = nil, ts: Double = Event.now()) {
        storage = Storage(type: type, ts: ts, session: session, turn: turn, part: part, cursor: cursor, data: data, raw: raw)
    }

    /// The wall clock, epoch milliseconds (rounded). Read from the system clock itself rather
    /// than through `Date()`: every event a mapper makes asks (bench/PROFILE.md).
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000).rounded()
    }

    public var type: EventType {
        get { storage.type }
        _modify { yield &unique().type }
    }
    /// Gateway receive time, epoch milliseconds.
    public var ts: Double {
        get { storage.ts }
        _modify { yield &unique().ts }
    }
    public var profile: String? {
        get { storage.profile }
        _modify { yield &unique().profile }
    }
    public var backend: BackendKind? {
        get { storage.backend }
        _modify { yield &unique().backend }
    }
    public var session: String? {
        get { storage.session }
        _modify { yield &unique().session }
    }
    public var turn: String? {
        get { storage.turn }
        _modify { yield &unique().turn }
    }
    public var part: String? {
        get { storage.part }
        _modify { yield &unique().part }
    }
    /// Opaque resume token, present when the backend can resume from this point.
    public var cursor: String? {
        get { storage.cursor }
        _modify { yield &unique().cursor }
    }
    public var data: JSONObject {
        get { storage.data }
        _modify { yield &unique().data }
    }
    /// The original wire message; only written with `--raw`.
    public var raw: JSONValue? {
        get { storage.raw }
        _modify { yield &unique().raw }
    }

    public static func == (lhs: Event, rhs: Event) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.hasSameFields(as: rhs.storage)
    }

    /// The box, copied first if another event shares it.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// The fields. Mutated only through `unique()`, that is while one event alone holds it:
    /// which is what makes sending it between tasks safe, and what rules out overlapping
    /// accesses, so the run-time exclusivity check (a call into the runtime per field read or
    /// written, 2.6 % of a Codex Worker flood's profile) is left out.
    private final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var type: EventType
        @exclusivity(unchecked) var ts: Double
        @exclusivity(unchecked) var profile: String?
        @exclusivity(unchecked) var backend: BackendKind?
        @exclusivity(unchecked) var session: String?
        @exclusivity(unchecked) var turn: String?
        @exclusivity(unchecked) var part: String?
        @exclusivity(unchecked) var cursor: String?
        @exclusivity(unchecked) var data: JSONObject
        @exclusivity(unchecked) var raw: JSONValue?

        init(type: EventType, ts: Double, profile: String? = nil, backend: BackendKind? = nil, session: String?,
             turn: String?, part: String?, cursor: String?, data: JSONObject, raw: JSONValue?) {
            self.type = type
            self.ts = ts
            self.profile = profile
            self.backend = backend
            self.session = session
            self.turn = turn
            self.part = part
            self.cursor = cursor
            self.data = data
            self.raw = raw
        }

        func copy() -> Storage {
            Storage(type: type, ts: ts, profile: profile, backend: backend, session: session, turn: turn, part: part,
                    cursor: cursor, data: data, raw: raw)
        }

        func hasSameFields(as other: Storage) -> Bool {
            type == other.type && ts == other.ts && profile == other.profile && backend == other.backend
                && session == other.session && turn == other.turn && part == other.part && cursor == other.cursor
                && data == other.data && raw == other.raw
        }
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
