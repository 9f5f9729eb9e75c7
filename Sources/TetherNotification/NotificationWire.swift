import TetherCore
import TetherStreaming

/// The signaling relay's JSON frames and the ChainlessChain envelopes they carry, as pure
/// functions: text in, decoded values out (and the reverse). Facts: protocols/notification.md
/// §2 (envelopes), §3 (events), §4.1 (relay).
///
/// Everything is read tolerantly, because the real desktop and the mobile client contract
/// disagree: payloads come as objects or as JSON strings, errors as `null`, strings or
/// `{code, message}`, events in two envelope families.
enum NotificationWire {
    static let requestType = "chainlesschain:command:request"
    static let responseTypes: Set<String> = ["chainlesschain:command:response", "command:response"]
    static let flatEventType = "chainlesschain:event"
    static let rpcEventType = "chainlesschain:event:notification"
    static let receivedNames: Set<String> = ["notification.received", "chainlesschain:notification:received"]

    // MARK: - Outbound

    static func register(peerID: String, deviceInfo: JSONObject) -> String {
        JSONValue.object(["type": "register", "peerId": .string(peerID), "deviceType": "mobile", "deviceInfo": .object(deviceInfo)])
            .serialized
    }

    static let getPeers = #"{"type":"get-peers"}"#

    /// A command request relayed to `desktop`. `auth` carries both clients' keys (Android `did`,
    /// iOS `mobileDid`); the desktop ignores auth on this path, but a stricter peer may not.
    static func request(id: String, method: NotificationMethod, params: JSONObject, from peerID: String,
                        to desktop: String, timestamp: Int64) -> String {
        let payload: JSONObject = [
            "id": .string(id), "method": .string(method.rawValue), "params": .object(params),
            "auth": ["did": .string(peerID), "mobileDid": .string(peerID)], "timestamp": .int(timestamp),
        ]
        return JSONValue.object([
            "type": "message", "to": .string(desktop),
            "payload": ["type": .string(requestType), "payload": .object(payload)],
        ]).serialized
    }

    // MARK: - Inbound

    struct Peer: Sendable, Equatable {
        var peerID: String
        var deviceType: String?
        var name: String?
        var connectedAt: Double?

        var json: JSONValue {
            .object(.compact(["peer_id": .string(peerID), "device_type": JSONValue(deviceType), "name": JSONValue(name),
                              "connected_at": JSONValue(connectedAt)]))
        }
    }

    struct RemoteError: Sendable, Equatable, CustomStringConvertible {
        var code: Int64?
        var message: String

        var description: String { code.map { "\($0) \(message)" } ?? message }
    }

    /// A JSON-RPC response to one of our requests.
    struct Response: Sendable, Equatable {
        var id: String
        var result: JSONValue?
        var error: RemoteError?
    }

    /// An event pushed by a peer: its name and its fields (the flat envelope's payload, or the
    /// JSON-RPC notification's `params`).
    struct PushedEvent: Sendable, Equatable {
        var name: String
        var fields: JSONObject
    }

    enum Inbound: Sendable, Equatable {
        case registered(peerID: String?)
        case peers([Peer])
        case peerOffline(peerID: String?)
        case relayError(String)
        case response(Response, from: String?)
        case event(PushedEvent, from: String?)
        /// Understood and of no interest (`peer-status`, `pong`, ICE config, pairing, …).
        case ignored(type: String)
        /// Not JSON, or a shape we cannot read.
        case malformed(reason: String)
    }

    /// A decoded frame: what it says, whether the relay replayed it from its offline queue
    /// (`offline-message`), and the parsed frame itself (for `--raw`).
    struct Frame: Sendable, Equatable {
        var inbound: Inbound
        var replayed: Bool
        var raw: JSONValue?
    }

    static func decode(_ text: String) -> Frame {
        guard let value = try? JSONParser.parse(text) else {
            return Frame(inbound: .malformed(reason: "not JSON: \(text.prefix(120))"), replayed: false, raw: nil)
        }
        if value["type"]?.string == "offline-message", let original = object(value["originalMessage"]) {
            return Frame(inbound: decode(relayFrame: original), replayed: true, raw: value)
        }
        return Frame(inbound: decode(relayFrame: value), replayed: false, raw: value)
    }

    static func decode(relayFrame value: JSONValue) -> Inbound {
        guard let type = value["type"]?.string else { return .malformed(reason: "a frame without a type") }
        switch type {
        case "registered":
            return .registered(peerID: value["peerId"]?.stringish)
        case "peers-list":
            let peers = (value["peers"]?.array ?? []).compactMap { entry -> Peer? in
                guard let id = entry["peerId"]?.stringish else { return nil }
                return Peer(peerID: id, deviceType: entry["deviceType"]?.string,
                            name: entry["deviceInfo"]?["name"]?.string ?? entry["deviceInfo"]?["deviceName"]?.string,
                            connectedAt: entry["connectedAt"]?.double)
            }
            return .peers(peers)
        case "peer-offline":
            return .peerOffline(peerID: value["peerId"]?.stringish ?? value["to"]?.stringish)
        case "error":
            return .relayError(value["error"]?.string ?? value["message"]?.string ?? "the relay reported an error")
        case "message":
            guard let payload = object(value["payload"]) else { return .malformed(reason: "a message without a payload") }
            return decode(envelope: payload, from: value["from"]?.stringish)
        default:
            return .ignored(type: type)
        }
    }

    /// A ChainlessChain envelope `{type, payload}` as relayed in a signaling `message`.
    static func decode(envelope: JSONValue, from: String?) -> Inbound {
        let type = envelope["type"]?.string ?? ""
        if responseTypes.contains(type) {
            guard let body = object(envelope["payload"]), let id = body["id"]?.stringish else {
                return .malformed(reason: "a command response without an id")
            }
            return .response(Response(id: id, result: body["result"].flatMap { $0.isNull ? JSONValue?.none : $0 },
                                      error: remoteError(body["error"])), from: from)
        }
        switch type {
        case flatEventType:
            guard let body = object(envelope["payload"])?.object, let name = body["event"]?.string else {
                return .malformed(reason: "an event without a name")
            }
            var fields = body
            fields["event"] = nil
            return .event(PushedEvent(name: name, fields: fields), from: from)
        case rpcEventType:
            guard let body = object(envelope["payload"]), let name = body["method"]?.string else {
                return .malformed(reason: "a JSON-RPC event without a method")
            }
            return .event(PushedEvent(name: name, fields: object(body["params"])?.object ?? [:]), from: from)
        case "chainlesschain:notification:received":
            return .event(PushedEvent(name: type, fields: object(envelope["payload"])?.object ?? [:]), from: from)
        default:
            return .ignored(type: type.isEmpty ? "(untyped message)" : type)
        }
    }

    /// `error` as either client reads it: `null`/absent, a string, or `{code, message, data?}`.
    static func remoteError(_ value: JSONValue?) -> RemoteError? {
        guard let value, !value.isNull else { return nil }
        if let text = value.string { return RemoteError(code: nil, message: text) }
        if let object = value.object {
            let message = object["message"]?.string ?? object["error"]?.string ?? JSONValue.object(object).serialized
            return RemoteError(code: object["code"]?.int, message: message)
        }
        return RemoteError(code: nil, message: value.serialized)
    }

    /// An object, or a JSON string holding one (the desktop stringifies payloads).
    static func object(_ value: JSONValue?) -> JSONValue? {
        switch value {
        case .object?: return value
        case .string(let text)?:
            guard let parsed = try? JSONParser.parse(text), parsed.object != nil else { return nil }
            return parsed
        default: return nil
        }
    }

    // MARK: - notification.received

    /// The notification a `notification.received` event carries (iOS requires `notificationId`,
    /// `title`, `body`; `priority` defaults to normal, `source` to pc). `nil` for other events
    /// and for ones without an id, which could not be deduplicated.
    static func notification(from event: PushedEvent) -> Notification? {
        guard receivedNames.contains(event.name) else { return nil }
        var fields = event.fields
        if let nested = fields["notification"]?.object { fields = nested }
        guard let id = (fields["notificationId"] ?? fields["id"])?.stringish, !id.isEmpty else { return nil }
        var extra: JSONObject = ["source": .string(fields["source"]?.string ?? "pc")]
        if let data = object(fields["data"]) { extra["data"] = data }
        return Notification(id: id, title: fields["title"]?.stringish ?? "", body: fields["body"]?.stringish ?? "",
                            priority: NotificationValues.priority(fields["priority"], urgency: fields["urgency"]) ?? "normal",
                            read: false, createdAt: NotificationValues.number(fields["timestamp"] ?? fields["createdAt"]),
                            extra: extra)
    }
}

/// Small tolerant readers shared by the decoders.
enum NotificationValues {
    static let priorities: Set<String> = ["low", "normal", "high", "urgent"]

    /// The contract's `priority`, or the desktop's Electron `urgency` (critical → urgent).
    /// An unknown priority reads as normal, as the iOS client does.
    static func priority(_ priority: JSONValue?, urgency: JSONValue?) -> String? {
        if let value = priority?.string?.lowercased() { return priorities.contains(value) ? value : "normal" }
        switch urgency?.string?.lowercased() {
        case "low": return "low"
        case "normal": return "normal"
        case "critical": return "urgent"
        case nil: return nil
        default: return "normal"
        }
    }

    /// A boolean as `true`/`false`, SQLite's 0/1, or their string forms.
    static func bool(_ value: JSONValue?) -> Bool? {
        switch value {
        case .bool(let flag)?: return flag
        case .int(let number)?: return number != 0
        case .double(let number)?: return number != 0
        case .string(let text)?:
            switch text.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default: return nil
            }
        default: return nil
        }
    }

    /// A number, or a numeric string.
    static func number(_ value: JSONValue?) -> Double? {
        if let number = value?.double { return number }
        if let text = value?.string { return Double(text) }
        return nil
    }
}
