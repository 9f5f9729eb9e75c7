import Foundation

/// The JSON-RPC envelopes of `codex app-server` as observed on codex 0.163 (protocol note §1, §8):
/// no `jsonrpc` member anywhere; responses `{"id","result"}`; errors `{"error":{code,message},"id"}`;
/// notifications `{"method","params","emittedAtMs"}`; server→client requests `{"method","id","params"}`
/// (no `emittedAtMs`).
enum CodexAppServerWire {
    typealias JSON = OrderedJSON

    static func result(id: JSON, _ result: JSON) -> JSON {
        ["id": id, "result": result]
    }

    static func error(id: JSON, _ error: CodexAppServerRPCError) -> JSON {
        var body: JSON = ["code": .int(error.code)]
        if let data = error.data { body["data"] = data }
        body["message"] = .string(error.message)
        return ["error": body, "id": id]
    }

    /// A notification stamped now: `emittedAtMs` goes last, as codex writes it.
    static func notification(_ method: String, _ params: JSON) -> JSON {
        ["method": .string(method), "params": params, "emittedAtMs": .int(nowMs)]
    }

    static func request(id: Int, method: String, params: JSON) -> JSON {
        ["method": .string(method), "id": .int(id), "params": params]
    }

    static var nowMs: Int { Int(Date().timeIntervalSince1970 * 1000) }
    static var nowSeconds: Int { Int(Date().timeIntervalSince1970) }
}

/// A JSON-RPC error codex answers with. Nearly everything is `-32600` "Invalid request" (§8).
struct CodexAppServerRPCError: Error, Sendable {
    var code = -32600
    var message: String
    var data: OrderedJSON?

    init(code: Int = -32600, _ message: String, data: OrderedJSON? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    static func missingField(_ name: String) -> Self { Self("Invalid request: missing field `\(name)`") }
    static func invalidType(_ name: String, expected: String) -> Self {
        Self("Invalid request: invalid type for `\(name)`, expected \(expected)")
    }
    static let notInitialized = Self("Not initialized")
    static let alreadyInitialized = Self("Already initialized")
    static let overloaded = Self(code: -32001, "Server overloaded; retry later.")
    static let draining = Self("Server is draining; retry after reconnecting", data: ["reason": "serverShuttingDown"])
    static func threadNotLoaded(_ id: String) -> Self { Self("thread not loaded: \(id)") }
    static func threadNotFound(_ id: String) -> Self { Self("thread not found: \(id)") }
    static func invalidThreadID(_ id: String) -> Self { Self("invalid thread id: \(id)") }
    static func noRollout(_ id: String) -> Self { Self("no rollout found for thread id \(id)") }
}

/// Reading request params the way serde does: a missing member is `missing field`.
extension OrderedJSON {
    func required(_ key: String) throws -> OrderedJSON {
        guard let value = self[key], value != .null else { throw CodexAppServerRPCError.missingField(key) }
        return value
    }

    func requiredString(_ key: String) throws -> String {
        let value = try required(key)
        guard let text = value.stringValue else { throw CodexAppServerRPCError.invalidType(key, expected: "a string") }
        return text
    }

    func optionalString(_ key: String) -> String? {
        self[key]?.stringValue
    }

    func flag(_ key: String) -> Bool {
        if case .bool(let value) = self[key] { return value }
        return false
    }

    var objectMembers: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }
}
