import Testing
import TetherCore
@testable import TetherNotification
import TetherStreaming

/// Relay frames and ChainlessChain envelopes, decoded from the fixtures (both payload forms,
/// both error forms, both event families, offline replays) and encoded for the wire.
struct NotificationWireTests {
    func decode(_ key: String) throws -> NotificationWire.Frame { NotificationWire.decode(try Fixture.frame(key)) }

    @Test func relayFrames() throws {
        #expect(try decode("registered").inbound == .registered(peerID: "tether-me@box-desk"))
        #expect(try decode("registered-reconnect").inbound == .registered(peerID: "tether-me@box-desk"))
        guard case .peers(let peers) = try decode("peers-list").inbound else { Issue.record("no peers"); return }
        #expect(peers.map(\.peerID) == ["did:key:z6MkPhone", "pc-7f3a", "tether-me@box-desk~1a2b"])
        #expect(peers[1] == NotificationWire.Peer(peerID: "pc-7f3a", deviceType: "desktop", name: "studio-pc", connectedAt: 1795310000000))
        #expect(try decode("peer-offline").inbound == .peerOffline(peerID: "pc-7f3a"))
        #expect(try decode("relay-error").inbound == .relayError("Missing \"to\" field in message"))
        #expect(try decode("peer-status").inbound == .ignored(type: "peer-status"))
        #expect(try decode("pong").inbound == .ignored(type: "pong"))
        #expect(try decode("ice-config").inbound == .ignored(type: "chainlesschain:ice:config"))
        #expect(NotificationWire.decode("not json").inbound == .malformed(reason: "not JSON: not json"))
        #expect(NotificationWire.decode("{\"peerId\":1}").inbound == .malformed(reason: "a frame without a type"))
    }

    @Test func responsesInEveryShape() throws {
        // The desktop: payload a JSON string, error null.
        #expect(try decode("response-desktop-stringified").inbound == .response(
            .init(id: "r-1", result: ["success": true, "count": 3], error: nil), from: "pc-7f3a"))
        // The desktop today: error an object.
        #expect(try decode("response-unknown-namespace").inbound == .response(
            .init(id: "r-1", result: JSONValue?.none, error: .init(code: -32603, message: "Unknown command namespace: notification")), from: "pc-7f3a"))
        // iOS' expectation: payload an object, error a string (or absent).
        #expect(try decode("response-contract-object").inbound == .response(
            .init(id: "r-2", result: ["success": true, "count": 0], error: nil), from: "pc-7f3a"))
        #expect(try decode("response-string-error").inbound == .response(
            .init(id: "r-3", result: JSONValue?.none, error: .init(code: nil, message: "remote handler crashed")), from: "pc-7f3a"))
        // A signaling payload that is itself a JSON string.
        #expect(try decode("response-message-payload-stringified").inbound == .response(
            .init(id: "r-4", result: ["success": true], error: nil), from: "pc-7f3a"))
        #expect(try decode("response-without-id").inbound == .malformed(reason: "a command response without an id"))
    }

    @Test func offlineReplaysAreUnwrapped() throws {
        let response = try decode("offline-response")
        #expect(response.replayed)
        #expect(response.inbound == .response(.init(id: "r-old", result: ["success": true], error: nil), from: "pc-7f3a"))
        let event = try decode("offline-event")
        #expect(event.replayed)
        guard case .event(let pushed, _) = event.inbound else { Issue.record("no event"); return }
        #expect(NotificationWire.notification(from: pushed)?.id == "notif-while-away")
    }

    func notification(_ key: String) throws -> Notification? {
        guard case .event(let event, _) = try decode(key).inbound else { return nil }
        return NotificationWire.notification(from: event)
    }

    @Test func notificationReceivedInBothFamilies() throws {
        let flat = try #require(try notification("event-flat-object"))
        #expect(flat == Notification(id: "notif-1795311063215-a1b2c3d4", title: "Build done", body: "main is green",
                                     priority: "high", read: false, createdAt: 1795311063215,
                                     extra: ["source": "pc", "data": ["url": "https://example.invalid/ci/42"]]))
        // The JSON-RPC family carries the same notification in `params`, here as a JSON string.
        let rpc = try #require(try notification("event-rpc-string"))
        #expect(rpc.id == flat.id && rpc.title == flat.title && rpc.body == flat.body && rpc.priority == "high")
        // A flat payload as a string; defaults for priority and source.
        let stringFlat = try #require(try notification("event-flat-string"))
        #expect(stringFlat.id == "notif-2" && stringFlat.priority == "normal" && stringFlat.createdAt == 1795311063216)
        #expect(stringFlat.extra["source"] == "pc")
        // Android's method name; an unknown priority reads as normal.
        let android = try #require(try notification("event-rpc-object"))
        #expect(android.id == "notif-3" && android.priority == "normal")
        #expect(try notification("event-android-type")?.id == "notif-4")
        // Other events, and notifications without an id, are not notifications.
        #expect(try notification("event-terminal") == nil)
        #expect(try notification("event-without-id") == nil)
    }

    @Test func theRequestEnvelope() throws {
        let text = NotificationWire.request(id: "r-9", method: .markAsRead, params: ["notificationId": "n-1", "id": "n-1"],
                                            from: "tether-me@box-desk~77", to: "pc-7f3a", timestamp: 1795311063215)
        let frame = try JSONParser.parse(text)
        #expect(frame == [
            "type": "message", "to": "pc-7f3a",
            "payload": [
                "type": "chainlesschain:command:request",
                "payload": [
                    "id": "r-9", "method": "notification.markAsRead", "params": ["notificationId": "n-1", "id": "n-1"],
                    "auth": ["did": "tether-me@box-desk~77", "mobileDid": "tether-me@box-desk~77"], "timestamp": 1795311063215,
                ],
            ],
        ])
    }

    @Test func registration() throws {
        let frame = try JSONParser.parse(NotificationWire.register(peerID: "p", deviceInfo: ["platform": "linux"]))
        #expect(frame == ["type": "register", "peerId": "p", "deviceType": "mobile", "deviceInfo": ["platform": "linux"]])
        #expect(NotificationWire.getPeers == #"{"type":"get-peers"}"#)
    }

    @Test func tolerantValues() {
        #expect(NotificationValues.bool(1) == true && NotificationValues.bool(0) == false && NotificationValues.bool("true") == true)
        #expect(NotificationValues.bool(nil) == nil && NotificationValues.bool("maybe") == nil)
        #expect(NotificationValues.priority(nil, urgency: "critical") == "urgent")
        #expect(NotificationValues.priority("HIGH", urgency: "low") == "high")
        #expect(NotificationValues.priority(nil, urgency: nil) == nil)
        #expect(NotificationValues.number("1795311063215") == 1795311063215)
    }
}
