import TetherCore

/// One event from OpenCode's SSE, from either endpoint: `/global/event` wraps it as
/// `{directory, project?, workspace?, payload: {id?, type, properties}}`; `/event` sends the
/// payload bare. Legacy servers omit `id`.
struct OpenCodeWireEvent: Sendable {
    var type: String
    var properties: JSONValue
    /// The instance directory (`/global/event` only; `"global"` for server-wide events).
    var directory: String?
    var raw: JSONValue

    enum DecodeError: Error, Equatable {
        case notJSON(String)
        case missingType
    }

    /// `strings`: the stream's table of recent ids, shared across its frames.
    static func decode(_ data: [UInt8], strings: JSONStringTable? = nil) throws(DecodeError) -> OpenCodeWireEvent {
        let value: JSONValue
        do { value = try JSONParser.parse(data, strings: strings) } catch { throw .notJSON(error.description) }
        return try decode(value)
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
