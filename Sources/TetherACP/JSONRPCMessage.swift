import TetherCore
import TetherStreaming

/// One JSON-RPC 2.0 message, as read from or written to a line of the stdio stream.
public enum JSONRPCMessage: Sendable, Equatable {
    case request(id: JSONValue, method: String, params: JSONValue?)
    case notification(method: String, params: JSONValue?)
    case response(id: JSONValue, result: JSONValue)
    case errorResponse(id: JSONValue, error: JSONRPCError)

    /// What a line of input turned out to be: a message, or the error to answer it with (and the
    /// id to answer, `null` when the line had none we could read).
    public enum Parsed: Sendable, Equatable {
        case message(JSONRPCMessage)
        case invalid(id: JSONValue, error: JSONRPCError)
    }

    public static func parse(line: String) -> Parsed {
        let value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            return .invalid(id: .null, error: .parseError(error.description))
        }
        guard case .object(let object) = value else {
            let reason = value.array != nil ? "batches are not supported; send one message per line" : "a message is a JSON object"
            return .invalid(id: .null, error: .invalidRequest(reason))
        }
        let id = object["id"]
        if let id, !Self.isValidID(id) {
            return .invalid(id: .null, error: .invalidRequest("\"id\" must be a string, a number or null"))
        }
        guard object["jsonrpc"]?.string == "2.0" else {
            return .invalid(id: id ?? .null, error: .invalidRequest("\"jsonrpc\" must be \"2.0\""))
        }
        let params = object["params"]
        if let params, params.object == nil, params.array == nil, !params.isNull {
            return .invalid(id: id ?? .null, error: .invalidRequest("\"params\" must be an object or an array"))
        }
        if let method = object["method"] {
            guard let name = method.string else {
                return .invalid(id: id ?? .null, error: .invalidRequest("\"method\" must be a string"))
            }
            guard let id else { return .message(.notification(method: name, params: params)) }
            return .message(.request(id: id, method: name, params: params))
        }
        guard let id else { return .invalid(id: .null, error: .invalidRequest("a message needs \"method\" or \"id\"")) }
        if let error = object["error"]?.object {
            let failure = JSONRPCError(code: error["code"]?.int ?? JSONRPCError.internalErrorCode,
                                       message: error["message"]?.string ?? "", data: error["data"])
            return .message(.errorResponse(id: id, error: failure))
        }
        return .message(.response(id: id, result: object["result"] ?? .null))
    }

    private static func isValidID(_ id: JSONValue) -> Bool {
        switch id {
        case .string, .int, .null: true
        case .double(let number): number.rounded() == number
        default: false
        }
    }

    public var json: JSONValue {
        switch self {
        case .request(let id, let method, let params):
            var object: JSONObject = ["jsonrpc": "2.0", "id": id, "method": .string(method)]
            if let params { object["params"] = params }
            return .object(object)
        case .notification(let method, let params):
            var object: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
            if let params { object["params"] = params }
            return .object(object)
        case .response(let id, let result):
            return ["jsonrpc": "2.0", "id": id, "result": result]
        case .errorResponse(let id, let error):
            return ["jsonrpc": "2.0", "id": id, "error": error.json]
        }
    }

    /// The message as one line of compact JSON, without the newline.
    public var line: String { json.serialized }
}
