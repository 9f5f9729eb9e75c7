/// The remote-command and event envelopes of notes §2 and §3, exactly as each side puts them on
/// the wire. These are the `payload`s of signaling `message` frames.
enum NotificationEnvelope {
    static let commandRequest = "chainlesschain:command:request"
    /// Also accepted by `mobile-bridge.js` (§3.3 dedup keys).
    static let legacyCommandRequest = "command:request"
    static let commandResponse = "chainlesschain:command:response"
    static let flatEvent = "chainlesschain:event"
    static let jsonRPCEvent = "chainlesschain:event:notification"
    static let receivedEvent = "notification.received"

    /// What the desktop's handler produced for one request.
    enum Outcome: Sendable, Equatable {
        case result(WireJSON)
        /// A thrown handler error or an unknown namespace (`code` -32603 on the mobile path).
        case failure(code: Int, message: String)
    }

    /// A command response in the given shape.
    ///
    /// - `.desktop`: `index.js handleMobileCommand` — `payload` is a *string* of a JSON-RPC 2.0
    ///   object with both keys: `"error":null` on success, `"result":null,"error":{code,message}` on failure.
    /// - `.contract`: what iOS' `TerminalRpcEnvelope.parseCommandResponse` accepts — `payload` is an
    ///   object, and a failure carries `error` as a string.
    static func response(id: WireJSON, outcome: Outcome, shape: NotificationSimulator.Shape) -> WireJSON {
        switch shape {
        case .desktop:
            let body: WireJSON = switch outcome {
            case .result(let result):
                ["jsonrpc": "2.0", "id": id, "result": result, "error": .null]
            case .failure(let code, let message):
                ["jsonrpc": "2.0", "id": id, "result": .null, "error": ["code": .int(code), "message": .string(message)]]
            }
            return ["type": .string(commandResponse), "payload": .string(body.serialized)]
        case .contract:
            let body: WireJSON = switch outcome {
            case .result(let result):
                ["jsonrpc": "2.0", "id": id, "result": result]
            case .failure(_, let message):
                ["jsonrpc": "2.0", "id": id, "result": .null, "error": .string(message)]
            }
            return ["type": .string(commandResponse), "payload": body]
        }
    }

    /// The fields of a `notification.received` event (§3.1; iOS requires `notificationId, title, body`).
    static func receivedFields(
        notificationID: String, title: String, body: String, priority: String, source: String,
        timestamp: Int, data: [String: String]?
    ) -> [WireJSON.Member] {
        var fields: [WireJSON.Member] = [
            .init(key: "notificationId", value: .string(notificationID)),
            .init(key: "title", value: .string(title)),
            .init(key: "body", value: .string(body)),
            .init(key: "priority", value: .string(priority)),
            .init(key: "source", value: .string(source)),
            .init(key: "timestamp", value: .int(timestamp)),
        ]
        if let data { fields.append(.init(key: "data", value: .sortedStringMap(data))) }
        return fields
    }

    /// A `notification.received` push in one family:
    /// flat `{type:"chainlesschain:event", payload:{event:"notification.received", …fields}}` or
    /// JSON-RPC `{type:"chainlesschain:event:notification", payload:{jsonrpc:"2.0", method:"notification.received", params:{…fields}}}`.
    static func received(
        fields: [WireJSON.Member], family: NotificationSimulator.PushFamily, encoding: NotificationSimulator.PushEncoding
    ) -> WireJSON {
        let type: String
        let payload: WireJSON
        switch family {
        case .flat:
            type = flatEvent
            payload = .object([.init(key: "event", value: .string(receivedEvent))] + fields)
        case .jsonRPC:
            type = jsonRPCEvent
            payload = ["jsonrpc": "2.0", "method": .string(receivedEvent), "params": .object(fields)]
        }
        let asString = switch encoding {
        case .asInNotes: family == .jsonRPC
        case .object: false
        case .string: true
        }
        return ["type": .string(type), "payload": asString ? .string(payload.serialized) : payload]
    }

    /// An envelope's inner payload: an object as is, or the object a JSON string holds (the desktop
    /// accepts both, §2.1). Nil when it is neither.
    static func innerPayload(_ value: WireJSON?) -> WireJSON? {
        switch value {
        case .object?: value
        case .string(let text)?: SignalingJSONParser.parse(text).flatMap { $0.wireIsObject ? $0 : nil }
        default: nil
        }
    }
}
