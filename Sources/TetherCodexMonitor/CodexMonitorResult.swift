import TetherCore
import TetherStreaming

/// The daemon passes a codex method's app-server response through whole, as its own `result`
/// (`{"id":7,"result":{"id":3,"result":{…}}}`), so an app-server failure arrives as a daemon
/// success: `{"id":8,"result":{"id":4,"error":{"code":-32600,"message":"thread not found"}}}`.
/// The desktop reads `response.result ?? response`; Tether does the same, after checking `error`.
enum CodexMonitorResult {
    /// An error from Codex's app-server, inside a daemon success.
    struct AppServerError: Error, Equatable, Sendable, CustomStringConvertible {
        let message: String
        let code: Int64?
        var description: String { code.map { "\(message) (code \($0))" } ?? message }

        /// Codex says the thread (or turn) does not exist, or is not loaded.
        var isNotFound: Bool { message.lowercased().contains("not found") }
    }

    /// `result.error` → failure; otherwise `result.result ?? result`. Results that are not
    /// objects (arrays, booleans) and daemon-level ones like `{ok:true}` pass through unchanged.
    static func unwrap(_ result: JSONValue) -> Result<JSONValue, AppServerError> {
        guard let object = result.object else { return .success(result) }
        if let error = object["error"], !error.isNull {
            let message = error["message"]?.string ?? error.string ?? error.serialized
            return .failure(AppServerError(message: message, code: error["code"]?.int))
        }
        if let inner = object["result"] { return .success(inner) }
        return .success(result)
    }
}
