import Foundation
import Testing
@testable import TetherSim

@Suite("Notification simulator: signaling relay (§4.1)")
struct NotificationRelayTests {
    @Test("register → registered {peerId, serverTime}; get-peers lists the desktop with deviceType desktop")
    func registerAndGetPeers() async throws {
        try await withNotificationSimulator { sim, url in
            let client = try await NotificationWSClient.connect(url)
            try client.send(#"{"type":"register","peerId":"did:key:z6MkGateway","deviceType":"mobile","deviceInfo":{"name":"linux-gw","platform":"linux"}}"#)
            let registered = try await client.next(type: "registered")
            #expect(registered["peerId"] as? String == "did:key:z6MkGateway")
            #expect(registered["serverTime"] is Int)
            #expect(registered["isReconnect"] == nil)

            try client.send(#"{"type":"get-peers"}"#)
            let list = try await client.next(type: "peers-list")
            let peers = try #require(list["peers"] as? [[String: Any]])
            #expect(list["count"] as? Int == 1)
            #expect(peers.count == 1) // the requester itself is not listed
            let desktop = try #require(peers.first)
            #expect(desktop["peerId"] as? String == "desktop-1")
            #expect(desktop["deviceType"] as? String == "desktop")
            #expect((desktop["deviceInfo"] as? [String: Any])?["platform"] as? String == "linux")
            #expect(desktop["connectedAt"] is Int)
            #expect(sim.peers().map(\.peerID) == ["desktop-1", "did:key:z6MkGateway"])
        }
    }

    @Test("others get peer-status online on register and offline when the socket goes")
    func peerStatusBroadcast() async throws {
        try await withNotificationSimulator { _, url in
            let first = try await NotificationWSClient.registered(url, as: "m1")
            let second = try await NotificationWSClient.registered(url, as: "m2")
            let online = try await first.next(type: "peer-status")
            #expect(online["peerId"] as? String == "m2")
            #expect(online["status"] as? String == "online")
            #expect(online["deviceType"] as? String == "mobile")
            #expect((online["deviceInfo"] as? [String: Any])?["name"] as? String == "linux-gw")
            #expect(online["timestamp"] is Int)
            second.close()
            let offline = try await first.next(type: "peer-status")
            #expect(offline["peerId"] as? String == "m2")
            #expect(offline["status"] as? String == "offline")
        }
    }

    @Test("ping → pong; relay errors are {type:error, error, timestamp}")
    func pingAndErrors() async throws {
        try await withNotificationSimulator { _, url in
            let client = try await NotificationWSClient.connect(url)
            try client.send(#"{"type":"ping"}"#)
            #expect(try await client.next(type: "pong")["timestamp"] is Int)

            let cases: [(String, String)] = [
                (#"{"type":"register","deviceType":"mobile"}"#, "peerId is required"),
                (#"{"type":"message","to":"desktop-1","payload":{}}"#, "Not registered"),
                (#"{"type":"bogus"}"#, "Unknown message type: bogus"),
                (#"{"no":"type"}"#, "Unknown message type: undefined"),
                ("not json", "Invalid message format"),
            ]
            for (frame, prefix) in cases {
                try client.send(frame)
                let error = try await client.next(type: "error")
                #expect((error["error"] as? String)?.hasPrefix(prefix) == true, "\(frame) → \(error)")
                #expect(error["timestamp"] is Int)
            }
            try client.send(#"{"type":"register","peerId":"m1","deviceType":"mobile"}"#)
            _ = try await client.next(type: "registered")
            try client.send(#"{"type":"message","payload":{}}"#)
            #expect((try await client.next(type: "error")["error"] as? String)?.hasPrefix(#"Missing "to" field"#) == true)
        }
    }

    @Test("message to an offline desktop: queued + peer-offline; on re-register the desktop answers the replay, late")
    func desktopOffline() async throws {
        try await withNotificationSimulator(.init(desktopOnline: false)) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.send(#"{"type":"get-peers"}"#)
            #expect(try await client.next(type: "peers-list")["count"] as? Int == 0)

            try client.sendCommand(id: "r-1", method: "notification.getUnreadCount")
            let offline = try await client.next(type: "peer-offline")
            #expect(offline["peerId"] as? String == "desktop-1")
            #expect(sim.queuedMessageCount(for: "desktop-1") == 1)
            #expect(sim.commands().isEmpty)

            sim.setDesktopOnline(true)
            let status = try await client.next(type: "peer-status")
            #expect(status["peerId"] as? String == "desktop-1" && status["deviceType"] as? String == "desktop")
            let response = try await client.nextResponse()
            #expect(response.body["id"] as? String == "r-1")
            #expect((response.body["result"] as? [String: Any])?["count"] as? Int == 2)
            let command = try await sim.waitForCommand("notification.getUnreadCount")
            #expect(command.replayed && command.from == "m1")
            #expect(sim.queuedMessageCount(for: "desktop-1") == 0)

            sim.setDesktopOnline(false)
            let gone = try await client.next(type: "peer-status")
            #expect(gone["peerId"] as? String == "desktop-1" && gone["status"] as? String == "offline")
            #expect(!sim.isDesktopOnline)
        }
    }

    @Test("frames for an offline mobile are replayed on its register as offline-message {originalMessage, storedAt, deliveredAt}")
    func offlineMessageReplay() async throws {
        try await withNotificationSimulator { sim, url in
            let first = try await NotificationWSClient.registered(url, as: "m1")
            first.close()
            _ = try await first.waitForClose()
            try await NotificationWSClient.waitUntil { !sim.peers().contains { $0.peerID == "m1" } }

            let id = try sim.push(title: "Build done", body: "main is green", to: "m1")
            #expect(sim.queuedMessageCount(for: "m1") == 2)

            let again = try await NotificationWSClient.connect(url)
            try again.send(#"{"type":"register","peerId":"m1","deviceType":"mobile"}"#)
            // `registered` first, then the queue in order.
            #expect(NotificationWSClient.type(of: try await again.nextText()) == "registered")
            for expected in ["chainlesschain:event", "chainlesschain:event:notification"] {
                let replay = try NotificationWSClient.object(try await again.nextText())
                #expect(replay["type"] as? String == "offline-message")
                #expect(replay["storedAt"] is Int && replay["deliveredAt"] is Int)
                let original = try #require(replay["originalMessage"] as? [String: Any])
                #expect(original["type"] as? String == "message")
                #expect(original["from"] as? String == "desktop-1")
                #expect(original["timestamp"] is Int)
                let envelope = try #require(original["payload"] as? [String: Any])
                #expect(envelope["type"] as? String == expected)
                let event = try NotificationWSClient.payloadObject(envelope["payload"])
                let fields = (event["params"] as? [String: Any]) ?? event
                #expect(fields["notificationId"] as? String == id)
            }
            #expect(sim.queuedMessageCount(for: "m1") == 0)
        }
    }

    @Test("registering a connected id kicks the older socket; isReconnect; the id stays registered")
    func reRegisterKicksOldSocket() async throws {
        try await withNotificationSimulator { sim, url in
            let old = try await NotificationWSClient.registered(url, as: "m1")
            let new = try await NotificationWSClient.connect(url)
            try new.send(#"{"type":"register","peerId":"m1","deviceType":"mobile"}"#)
            let registered = try await new.next(type: "registered")
            #expect(registered["isReconnect"] as? Bool == true)
            #expect(try await old.waitForClose() == 1000)
            try await Task.sleep(for: .milliseconds(50))
            #expect(sim.peers().map(\.peerID) == ["desktop-1", "m1"])
            let id = try sim.push(title: "t", body: "b", to: "m1", families: [.flat])
            let frame = try await new.nextMessage(envelope: "chainlesschain:event")
            #expect((frame["payload"] as? [String: Any]).flatMap { ($0["payload"] as? [String: Any])?["notificationId"] as? String } == id)
        }
    }

    @Test("offer / pairing frames are forwarded with `from` in place of `to`; to an offline peer → peer-offline")
    func forwarding() async throws {
        try await withNotificationSimulator { _, url in
            let alice = try await NotificationWSClient.registered(url, as: "alice")
            let bob = try await NotificationWSClient.registered(url, as: "bob")
            try alice.send(#"{"type":"offer","to":"bob","offer":{"type":"offer","sdp":"v=0"},"iceRestart":false}"#)
            #expect(try await bob.nextText(type: "offer") == #"{"type":"offer","from":"alice","offer":{"type":"offer","sdp":"v=0"},"iceRestart":false}"#)
            try alice.send(#"{"type":"pairing:request","to":"carol","code":"123456"}"#)
            #expect(try await alice.next(type: "peer-offline")["peerId"] as? String == "carol")
        }
    }

    @Test("peer-status query → peer-status-response")
    func peerStatusQuery() async throws {
        try await withNotificationSimulator { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.send(#"{"type":"peer-status","peerId":"desktop-1"}"#)
            let online = try await client.next(type: "peer-status-response")
            #expect(online["status"] as? String == "online" && online["deviceType"] as? String == "desktop")
            try client.send(#"{"type":"peer-status","peerId":"nobody"}"#)
            #expect(try await client.next(type: "peer-status-response")["status"] as? String == "offline")
        }
    }
}

extension NotificationWSClient {
    /// Polls `condition` every few milliseconds until it holds.
    static func waitUntil(timeout: Duration = .seconds(5), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw Failure(description: "condition not met in time") }
            try await Task.sleep(for: .milliseconds(3))
        }
    }
}
