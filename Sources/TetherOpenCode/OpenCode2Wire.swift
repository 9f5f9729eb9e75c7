import TetherCore
import TetherStreaming

/// One frame of an OpenCode 2.x event stream (protocols/opencode-v2.md §4.1, §4.4), read:
/// `GET /api/event` and the durable session log carry the same envelope
/// `{id, created, type, location?, durable?{aggregateID, seq, version}, data}`; the log also sends
/// one marker `{type: "log.synced", aggregateID, seq?}` when its replay reached the watermark.
struct OpenCode2WireEvent: Sendable, Equatable {
    var type: String
    /// `data`, `{}` when the frame has none.
    var data: JSONValue
    /// `data.sessionID`, or the durable aggregate, or the marker's `aggregateID`.
    var session: String?
    /// `durable.seq` (the log position; the `--since` cursor), or the marker's `seq`.
    var seq: Int?
    var directory: String?
    /// The envelope's `created` (the server's clock, ms since the epoch).
    var created: Int?
    /// The frame as it came, for `--raw`.
    var raw: JSONValue?

    var isSyncedMarker: Bool { type == "log.synced" }
    var isDurable: Bool { seq != nil && !isSyncedMarker }
}

/// Why a 2.x frame could not be read; the stream logs it and skips the frame.
struct OpenCode2WireError: Error, CustomStringConvertible, Equatable {
    let description: String
}

/// Decodes 2.x frames and REST envelopes. Pure; never traps: anything malformed is an
/// `OpenCode2WireError` that says what was wrong.
enum OpenCode2WireDecoder {
    static func decode(_ bytes: [UInt8], keepingRaw: Bool = true) throws(OpenCode2WireError) -> OpenCode2WireEvent {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw OpenCode2WireError(description: "an OpenCode 2 event that is not JSON (\(error.description))")
        }
        return try decode(value, keepingRaw: keepingRaw)
    }

    static func decode(_ value: JSONValue, keepingRaw: Bool = true) throws(OpenCode2WireError) -> OpenCode2WireEvent {
        guard value.object != nil else {
            throw OpenCode2WireError(description: "an OpenCode 2 event that is not an object: \(value.serialized.prefix(120))")
        }
        guard let type = value["type"]?.string, !type.isEmpty else {
            throw OpenCode2WireError(description: "an OpenCode 2 event without a type: \(value.serialized.prefix(120))")
        }
        if type == "log.synced" {
            return OpenCode2WireEvent(type: type, data: .object([:]), session: value["aggregateID"]?.string,
                                      seq: try seq(value["seq"]), directory: nil, created: nil, raw: keepingRaw ? Optional(value) : nil)
        }
        let data = value["data"] ?? .object([:])
        guard data.object != nil else {
            throw OpenCode2WireError(description: "an OpenCode 2 \(type) event whose data is not an object")
        }
        let durable = value["durable"]
        var seq: Int?
        if let durable, !durable.isNull {
            seq = try Self.seq(durable["seq"])
            if seq == nil { throw OpenCode2WireError(description: "an OpenCode 2 \(type) event marked durable without a seq") }
        }
        return OpenCode2WireEvent(
            type: type, data: data,
            session: data["sessionID"]?.string ?? durable?["aggregateID"]?.string,
            seq: seq, directory: value["location"]?["directory"]?.string, created: value["created"]?.int.map(Int.init),
            raw: keepingRaw ? Optional(value) : nil)
    }

    /// A seq: a non-negative integer, or absent.
    private static func seq(_ value: JSONValue?) throws(OpenCode2WireError) -> Int? {
        guard let value, !value.isNull else { return nil }
        guard let number = value.int, number >= 0 else {
            throw OpenCode2WireError(description: "an OpenCode 2 durable seq that is not a non-negative integer: \(value.serialized.prefix(40))")
        }
        return Int(number)
    }

    /// A REST answer's payload: `{data: …}` (objects, and lists with `cursor`) unwrapped. A body
    /// without `data` is taken as it is (`/api/info` and `…/interrupt` may come bare, §3).
    static func payload(_ body: JSONValue) -> JSONValue {
        if let object = body.object, let data = object["data"] { return data }
        return body
    }

    /// A list answer's items; a clear error when it is not a list.
    static func list(_ body: JSONValue, what: String) throws(OpenCode2WireError) -> [JSONValue] {
        guard let items = payload(body).array else {
            throw OpenCode2WireError(description: "OpenCode 2 sent \(what) that is not a list: \(body.serialized.prefix(120))")
        }
        return items
    }
}
