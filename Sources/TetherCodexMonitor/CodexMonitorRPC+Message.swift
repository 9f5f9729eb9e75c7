import TetherCore
import TetherStreaming

extension CodexMonitorRPC {
    /// One line from the daemon, classified. The daemon's envelope is JSON-RPC without the
    /// `jsonrpc` field: `{id, result}` / `{id, error:{message}}` answer our requests, and
    /// `{method, params}` (no id) are its notifications.
    enum Message: Equatable {
        case response(id: Int64, Result<JSONValue, RemoteError>)
        case notification(method: String, params: JSONValue)
        /// A request from the daemon to us. The daemon sends none (app-server requests come
        /// wrapped in `app-server-event`), so these are logged and skipped.
        case request(id: JSONValue, method: String)
        case invalid(reason: String)

        static func classify(_ value: JSONValue) -> Message {
            guard let object = value.object else { return .invalid(reason: "not a JSON object") }
            if let method = object["method"]?.string {
                if let id = object["id"], !id.isNull { return .request(id: id, method: method) }
                return .notification(method: method, params: object["params"] ?? .null)
            }
            guard let idValue = object["id"] else { return .invalid(reason: "neither a method nor an id") }
            guard let id = idValue.int, id >= 0 else { return .invalid(reason: "id \(idValue.serialized) is not one of ours") }
            if let error = object["error"], !error.isNull {
                let message = error["message"]?.string ?? error.string ?? error.serialized
                return .response(id: id, .failure(RemoteError(message: message)))
            }
            guard let result = object["result"] else { return .invalid(reason: "response \(id) has neither result nor error") }
            return .response(id: id, .success(result))
        }
    }

    /// The daemon's own error, `{"error":{"message":"…"}}` (it never sends a code).
    struct RemoteError: Error, Equatable, Sendable, CustomStringConvertible {
        let message: String
        var description: String { message }

        var isUnknownMethod: Bool { message.hasPrefix("unknown method") }
    }
}
