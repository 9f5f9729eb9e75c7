import TetherCore
import TetherStreaming

/// A JSON-RPC 2.0 error object. Codes are the spec's (and ACP's -32002 for a missing resource);
/// the message always says what failed and, from a `TetherError`'s hint, what to do.
public struct JSONRPCError: Error, Sendable, Equatable {
    public var code: Int64
    public var message: String
    public var data: JSONValue?

    public init(code: Int64, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public static let parseErrorCode: Int64 = -32700
    public static let invalidRequestCode: Int64 = -32600
    public static let methodNotFoundCode: Int64 = -32601
    public static let invalidParamsCode: Int64 = -32602
    public static let internalErrorCode: Int64 = -32603
    /// ACP's "resource not found" (a session id the backend does not know).
    public static let resourceNotFoundCode: Int64 = -32002

    public static func parseError(_ reason: String) -> JSONRPCError {
        JSONRPCError(code: parseErrorCode, message: "Parse error: \(reason); send one JSON-RPC 2.0 message per line")
    }

    public static func invalidRequest(_ reason: String) -> JSONRPCError {
        JSONRPCError(code: invalidRequestCode, message: "Invalid request: \(reason)")
    }

    public static func methodNotFound(_ method: String) -> JSONRPCError {
        JSONRPCError(code: methodNotFoundCode, message: "Method not found: \(method) (tether acp does not implement it)",
                     data: ["method": .string(method)])
    }

    public static func invalidParams(_ reason: String) -> JSONRPCError {
        JSONRPCError(code: invalidParamsCode, message: "Invalid params: \(reason)")
    }

    /// A backend failure as the editor sees it: what was being done, the backend's message, and
    /// the hint. Tether's messages never carry secrets, so nothing here can leak one.
    public static func backend(_ error: TetherError, doing what: String) -> JSONRPCError {
        var message = "\(what) failed: \(error.message)"
        if let hint = error.hint { message += " — \(hint)" }
        let code = error.code == .notFound ? resourceNotFoundCode : internalErrorCode
        return JSONRPCError(code: code, message: message, data: .object(.compact([
            "tether_code": .string(error.code.rawValue), "retryable": .bool(error.retryable),
        ])))
    }

    public var json: JSONValue {
        var object: JSONObject = ["code": .int(code), "message": .string(message)]
        if let data { object["data"] = data }
        return .object(object)
    }
}
