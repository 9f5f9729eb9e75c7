import TetherCore
import TetherStreaming

/// One event from OpenCode's SSE, from either endpoint: `/global/event` wraps it as
/// `{directory, project?, workspace?, payload: {id?, type, properties}}`; `/event` sends the
/// payload bare. Legacy servers omit `id`.
struct OpenCodeWireEvent: Sendable {
    enum Body: Sendable {
        /// The payload's `properties`, as the wire has them.
        case properties(JSONValue)
        /// `message.part.delta`, read.
        case partDelta(OpenCodePartDelta)
        /// `message.part.updated`, read: the part and, from legacy servers, the new piece of text.
        case partUpdated(OpenCodePartSnapshot, delta: String?)
    }

    var type: String
    /// The instance directory (`/global/event` only; `"global"` for server-wide events).
    var directory: String?
    var body: Body
    /// The whole message, for `--raw`; nil when the stream was not asked to keep it.
    var raw: JSONValue?

    enum DecodeError: Error, Equatable {
        case notJSON(String)
        case missingType
    }

    init(type: String, directory: String?, body: Body, raw: JSONValue?) {
        self.type = type
        self.directory = directory
        self.body = body
        self.raw = raw
    }

    init(type: String, properties: JSONValue, directory: String?, raw: JSONValue?) {
        self.init(type: type, directory: directory, body: .properties(properties), raw: raw)
    }

    /// Whether the payload was parsed as a tree (`.properties`): every type but the part frames
    /// `OpenCodeHotFrame` reads, which are neither connection nor session events.
    var isParsed: Bool {
        if case .properties = body { return true }
        return false
    }

    /// The payload's `properties` as JSON; empty for the frames read without a tree (`Body`).
    var properties: JSONValue {
        if case .properties(let properties) = body { return properties }
        return .object([:])
    }

    /// `strings`: the stream's table of recent ids, shared across its frames. `keepingRaw`:
    /// whether `raw` is wanted; without it, the frames a busy stream is made of (text parts
    /// and their deltas) are read straight from the bytes and never built as a tree.
    static func decode(_ data: [UInt8], strings: JSONStringTable? = nil, keepingRaw: Bool = true) throws(DecodeError) -> OpenCodeWireEvent {
        if !keepingRaw, let hot = OpenCodeHotFrame.read(data, strings: strings) { return hot }
        let value: JSONValue
        do { value = try JSONParser.parse(data, strings: strings) } catch { throw .notJSON(error.description) }
        var wire = try decode(value)
        if !keepingRaw { wire.raw = nil }
        return wire
    }

    static func decode(_ data: String) throws(DecodeError) -> OpenCodeWireEvent {
        try decode(Array(data.utf8))
    }

    static func decode(_ value: JSONValue) throws(DecodeError) -> OpenCodeWireEvent {
        let payload = value["payload"] ?? value
        guard let type = payload["type"]?.string else { throw .missingType }
        return OpenCodeWireEvent(type: type, properties: payload["properties"] ?? .object([:]),
                                 directory: value["directory"]?.string, raw: value)
    }
}

/// `message.part.delta`: a piece of one field (`text` unless said) of a part.
struct OpenCodePartDelta: Sendable {
    var session: String
    var message: String?
    var part: String
    var field: String
    var delta: String

    init(session: String, message: String?, part: String, field: String?, delta: String) {
        self.session = session
        self.message = message
        self.part = part
        self.field = field ?? "text"
        self.delta = delta
    }

    init?(_ properties: JSONValue) {
        guard let part = properties["partID"]?.string, let delta = properties["delta"]?.string,
              let session = properties["sessionID"]?.string else { return nil }
        self.init(session: session, message: properties["messageID"]?.string, part: part,
                  field: properties["field"]?.string, delta: delta)
    }
}
