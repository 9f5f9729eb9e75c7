import Foundation
import Testing
@testable import TetherSim

@Suite("Notification simulator: notification.received pushes (§3)")
struct NotificationPushTests {
    @Test("both families, as in the notes: flat with an object payload, JSON-RPC with a string payload")
    func bothFamilies() async throws {
        try await withNotificationSimulator { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let id = try sim.push(title: "Build done", body: "main is green", priority: "high",
                                  data: ["url": "https://example.invalid/ci/42"])
            #expect(id.hasPrefix("notif-"))

            let flat = try await client.nextMessage(envelope: "chainlesschain:event")
            #expect(flat["from"] as? String == "desktop-1")
            let flatEnvelope = try #require(flat["payload"] as? [String: Any])
            let fields = try #require(flatEnvelope["payload"] as? [String: Any])
            #expect(fields["event"] as? String == "notification.received")
            #expect(fields["notificationId"] as? String == id)
            #expect(fields["title"] as? String == "Build done" && fields["body"] as? String == "main is green")
            #expect(fields["priority"] as? String == "high" && fields["source"] as? String == "pc")
            #expect(fields["timestamp"] is Int)
            #expect((fields["data"] as? [String: Any])?["url"] as? String == "https://example.invalid/ci/42")

            let rpc = try await client.nextMessage(envelope: "chainlesschain:event:notification")
            let rpcEnvelope = try #require(rpc["payload"] as? [String: Any])
            let text = try #require(rpcEnvelope["payload"] as? String)
            #expect(text.hasPrefix(#"{"jsonrpc":"2.0","method":"notification.received","params":{"notificationId":"\#(id)","title":"Build done""#))
            let params = try #require(try NotificationWSClient.object(text)["params"] as? [String: Any])
            #expect(params["notificationId"] as? String == id && params["priority"] as? String == "high")

            // The desktop records what it pushed.
            let stored = try #require(sim.notification(id: id))
            #expect(stored.source == "pc" && stored.sentToMobile && !stored.read && stored.priority == "high")
        }
    }

    @Test("encoding .string / .object applies to every family")
    func encodings() async throws {
        try await withNotificationSimulator { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try sim.push(title: "a", body: "b", encoding: .string)
            for type in ["chainlesschain:event", "chainlesschain:event:notification"] {
                let frame = try await client.nextMessage(envelope: type)
                #expect((frame["payload"] as? [String: Any])?["payload"] is String, "\(type)")
            }
            try sim.push(title: "a", body: "b", encoding: .object)
            for type in ["chainlesschain:event", "chainlesschain:event:notification"] {
                let frame = try await client.nextMessage(envelope: type)
                #expect((frame["payload"] as? [String: Any])?["payload"] is [String: Any], "\(type)")
            }
        }
    }

    @Test("twice: every frame again with the same notificationId; only to non-desktop peers")
    func twice() async throws {
        try await withNotificationSimulator { sim, url in
            let first = try await NotificationWSClient.registered(url, as: "m1")
            let second = try await NotificationWSClient.registered(url, as: "m2")
            let id = try sim.push(title: "t", body: "b", families: [.jsonRPC], twice: true)
            for client in [first, second] {
                for _ in 0..<2 {
                    let frame = try await client.nextMessage(envelope: "chainlesschain:event:notification")
                    let envelope = try #require(frame["payload"] as? [String: Any])
                    let params = try NotificationWSClient.payloadObject(envelope["payload"])["params"] as? [String: Any]
                    #expect(params?["notificationId"] as? String == id)
                }
                #expect(try await client.count(type: "message", after: .milliseconds(50)) == 0)
            }
            #expect(sim.notifications().filter { $0.id == id }.count == 1)
        }
    }

    @Test("push needs a running simulator and an online desktop")
    func pushPreconditions() async throws {
        let idle = NotificationSimulator()
        #expect(throws: NotificationSimulatorError.self) { try idle.push(title: "t", body: "b") }
        try await withNotificationSimulator(.init(desktopOnline: false)) { sim, _ in
            #expect(throws: NotificationSimulatorError.self) { try sim.push(title: "t", body: "b") }
            sim.setDesktopOnline(true)
            let id = try sim.push(title: "t", body: "b")
            #expect(id.hasPrefix("notif-"))
        }
    }
}
