import TetherStreaming

/// The JSON Lines codec for schema v1: one event, one line, keys in the documented order
/// (`v`, `type`, `ts`, `profile`, `backend`, `session`, `turn`, `part`, `cursor`, `data`, `raw`).
public struct EventCodec: Sendable {
    public struct DecodingError: Error, CustomStringConvertible, Sendable {
        public let reason: String
        public var description: String { "not a Tether v1 event line: \(reason)" }
    }

    /// Whether `raw` is written (the CLI's `--raw`).
    public var includeRaw: Bool
    private var writer = JSONWriter(reservingCapacity: 512)

    public init(includeRaw: Bool = false) {
        self.includeRaw = includeRaw
    }

    /// Encodes one event as a line, newline included.
    public mutating func encode(_ event: Event) -> [UInt8] {
        writer.reset()
        append(event)
        return writer.bytes
    }

    /// Encodes `events` as consecutive lines, newlines included. `profile` and `backend` stand in
    /// for events that carry none.
    public mutating func encodeLines(_ events: [Event], profile: String? = nil, backend: BackendKind? = nil) -> [UInt8] {
        encodeBatch(events, profile: profile, backend: backend)
        return writer.bytes
    }

    /// `events` as consecutive lines straight to a file descriptor, from the codec's reused
    /// buffer (one `write(2)` for the batch).
    public mutating func writeLines(_ events: [Event], profile: String? = nil, backend: BackendKind? = nil,
                                    to descriptor: Int32) -> FileDescriptorWriter.Outcome {
        encodeBatch(events, profile: profile, backend: backend)
        return FileDescriptorWriter.writeAll(descriptor, writer)
    }

    private mutating func encodeBatch(_ events: [Event], profile: String?, backend: BackendKind?) {
        writer.reset()
        for index in events.indices { append(events[index], profile: profile, backend: backend) }
    }

    private mutating func append(_ event: Event, profile: String? = nil, backend: BackendKind? = nil) {
        writeHeader(event.type, ts: event.ts, profile: event.profile ?? profile, backend: event.backend ?? backend)
        if let session = event.session { sessionField.write(session, to: &writer) }
        if let turn = event.turn { turnField.write(turn, to: &writer) }
        optional(",\"part\":", event.part)
        optional(",\"cursor\":", event.cursor)
        writer.writeRaw(",\"data\":" as StaticString)
        writer.write(.object(event.data))
        if includeRaw, let raw = event.raw {
            writer.writeRaw(",\"raw\":" as StaticString)
            writer.write(raw)
        }
        writer.writeRaw("}\n" as StaticString)
    }

    // MARK: Repeated bytes
    //
    // The lines of a stream repeat most of their opening: a handful of types, one millisecond
    // for a whole burst, one profile and backend, one session. What was written for those is
    // kept and copied rather than escaped again (`EventCodecTests` holds a reused codec's lines
    // equal to a fresh one's).

    /// `{"v":1,"type":…,"ts":…,"profile":…,"backend":…` as written for each type, while the
    /// time, profile and backend stay the same.
    private var headers = HeaderCache()

    private struct HeaderCache {
        var ts = Double.nan
        var profile: String?
        var backend: BackendKind?
        /// Each type's header, where it is in `bytes`: one array of bytes, not one per type,
        /// so that finding and copying one copies no array (a retain and a release a line).
        var byType: [(type: EventType, range: Range<Int>)] = []
        var bytes: [UInt8] = []

        mutating func reset(ts: Double, profile: String?, backend: BackendKind?) {
            self.ts = ts
            self.profile = profile
            self.backend = backend
            byType.removeAll(keepingCapacity: true)
            bytes.removeAll(keepingCapacity: true)
        }

        /// Writes the header kept for `type`, if there is one.
        func writeCached(_ type: EventType, to writer: inout JSONWriter) -> Bool {
            for entry in byType where entry.type == type {
                writer.writeRaw(bytes[entry.range])
                return true
            }
            return false
        }

        /// Keeps what `writer` wrote from `start` on as `type`'s header.
        mutating func keep(_ type: EventType, from start: Int, of writer: JSONWriter) {
            let first = bytes.count
            writer.appendBytes(from: start, to: &bytes)
            byType.append((type, first..<bytes.count))
        }
    }

    /// A field's last value and the bytes written for it (`,"session":"…"`).
    private struct FieldCache {
        let separatorAndKey: StaticString
        var value: String?
        var bytes: [UInt8] = []

        mutating func write(_ value: String, to writer: inout JSONWriter) {
            if String.sameBytes(self.value, value) {
                writer.writeRaw(bytes)
                return
            }
            let start = writer.count
            writer.writeRaw(separatorAndKey)
            writer.writeString(value)
            self.value = value
            bytes = writer.bytes(from: start)
        }
    }

    private var sessionField = FieldCache(separatorAndKey: ",\"session\":")
    private var turnField = FieldCache(separatorAndKey: ",\"turn\":")

    private mutating func writeHeader(_ type: EventType, ts: Double, profile: String?, backend: BackendKind?) {
        if headers.ts != ts || headers.backend != backend || !String.sameBytes(headers.profile, profile) {
            headers.reset(ts: ts, profile: profile, backend: backend)
        } else if headers.writeCached(type, to: &writer) {
            return
        }
        let start = writer.count
        writer.writeRaw("{\"v\":1,\"type\":" as StaticString)
        writer.writeString(type.rawValue)
        writer.writeRaw(",\"ts\":" as StaticString)
        writer.writeString(Self.timestamp(milliseconds: ts))
        optional(",\"profile\":", profile)
        optional(",\"backend\":", backend?.rawValue)
        headers.keep(type, from: start, of: writer)
    }

    /// `,"key":` and the value, when there is one.
    private mutating func optional(_ separatorAndKey: StaticString, _ value: String?) {
        guard let value else { return }
        writer.writeRaw(separatorAndKey)
        writer.writeString(value)
    }

    public static func decode(_ line: String) throws -> Event {
        let value: JSONValue
        do { value = try JSONParser.parse(line) } catch { throw DecodingError(reason: error.description) }
        guard value["v"]?.int == 1 else { throw DecodingError(reason: "missing or unknown schema version \"v\"") }
        guard let typeName = value["type"]?.string, let type = EventType(rawValue: typeName) else {
            throw DecodingError(reason: "unknown event type \(value["type"]?.serialized ?? "(none)")")
        }
        guard let tsText = value["ts"]?.string, let ts = parseTimestamp(tsText) else {
            throw DecodingError(reason: "\"ts\" is not an ISO 8601 UTC timestamp")
        }
        var event = Event(type, session: value["session"]?.string, turn: value["turn"]?.string,
                          part: value["part"]?.string, cursor: value["cursor"]?.string,
                          data: value["data"]?.object ?? [:], raw: value["raw"], ts: ts)
        event.profile = value["profile"]?.string
        event.backend = value["backend"]?.string.flatMap(BackendKind.init(rawValue:))
        return event
    }

    // MARK: Timestamps (UTC, milliseconds), without Foundation formatters on the hot path.

    public static func timestamp(milliseconds: Double) -> String {
        let total = Int64(milliseconds.rounded())
        let millis = Int(((total % 1000) + 1000) % 1000)
        let seconds = (total - Int64(millis)) / 1000
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let secondOfDay = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(millis, 3))Z"
    }

    public static func parseTimestamp(_ text: String) -> Double? {
        // YYYY-MM-DDTHH:MM:SS(.fff)Z
        let utf8 = Array(text.utf8)
        guard utf8.count >= 20, utf8.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= utf8.count else { return nil }
            var value = 0
            for index in range {
                let byte = utf8[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var millis = 0
        if utf8.count > 20 {
            // Any number of fraction digits; only the first three count (no overflow on a long tail).
            guard utf8[19] == UInt8(ascii: "."), utf8.count > 21, utf8[20..<(utf8.count - 1)].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            else { return nil }
            let digits = min(utf8.count - 21, 3)
            guard let fraction = number(20..<(20 + digits)) else { return nil }
            millis = fraction * Int(pow10(3 - digits))
        }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return Double(((Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000) + Int64(millis))
    }

    private static func pow10(_ exponent: Int) -> Int64 {
        var value: Int64 = 1
        for _ in 0..<max(0, min(exponent, 18)) { value *= 10 }
        return value
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    // Howard Hinnant's days-from-civil algorithms.
    private static func civilDate(daysSinceEpoch days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
