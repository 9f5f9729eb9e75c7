import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// One message the server sent unasked (a notification or a server request), as the
/// connection's reader decoded it, ahead of its consumers.
enum CodexAppServerMessage: Sendable, Equatable {
    /// An item's delta or `item/started`, read straight from its bytes (``CodexHotMessage``),
    /// which are kept for a stream that shows each event's wire message (`--raw`).
    case hot(CodexHotMessage, text: [UInt8])
    /// Anything else, parsed whole.
    case whole(JSONValue)

    /// The message as a tree (a hot one is parsed now).
    var json: JSONValue {
        switch self {
        case .whole(let message): message
        case .hot(_, let text): (try? JSONParser.parse(text)) ?? .null
        }
    }

    /// The message, when it was parsed whole: requests and everything but deltas and items
    /// started, which a caller waiting for a request or a turn's end looks at.
    var whole: JSONValue? {
        if case .whole(let message) = self { return message }
        return nil
    }
}
