import Foundation
import Testing
@testable import TetherSim

@Suite("Notification simulator: relayed commands (§1, §2, §5)")
struct NotificationCommandTests {
    static let desktop = NotificationSimulator.Options(shape: .desktop)
    static let contract = NotificationSimulator.Options(shape: .contract)

    @Test("desktop shape: payload is a JSON string of {jsonrpc, id, result, error:null}")
    func desktopEnvelope() async throws {
        try await withNotificationSimulator(Self.desktop) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.sendCommand(id: "r-1", method: "notification.getUnreadCount")
            let frame = try await client.nextMessage(envelope: "chainlesschain:command:response")
            #expect(frame["from"] as? String == "desktop-1")
            #expect(frame["timestamp"] is Int)
            let envelope = try #require(frame["payload"] as? [String: Any])
            let text = try #require(envelope["payload"] as? String)
            #expect(text == #"{"jsonrpc":"2.0","id":"r-1","result":{"success":true,"count":2},"error":null}"#)
            let command = try #require(sim.commands().first)
            #expect(command.method == "notification.getUnreadCount" && command.requestID == "r-1" && command.from == "m1")
            #expect(!command.duplicate && !command.replayed && !command.payloadWasString)
        }
    }

    @Test("contract shape: payload is an object {jsonrpc, id, result}")
    func contractEnvelope() async throws {
        try await withNotificationSimulator(Self.contract) { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.sendCommand(id: "r-2", method: "notification.getUnreadCount")
            let frame = try await client.nextMessage(envelope: "chainlesschain:command:response")
            let envelope = try #require(frame["payload"] as? [String: Any])
            let body = try #require(envelope["payload"] as? [String: Any])
            #expect(body["id"] as? String == "r-2")
            #expect(body["error"] == nil)
            #expect((body["result"] as? [String: Any])?["count"] as? Int == 2)
        }
    }

    @Test("unknownNamespace: the real desktop's answer, byte for byte (§4.1); as a string error in the contract shape")
    func unknownNamespace() async throws {
        try await withNotificationSimulator(.init(shape: .desktop, unknownNamespace: true)) { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.sendCommand(id: "r-1", method: "notification.getUnreadCount")
            let frame = try await client.nextMessage(envelope: "chainlesschain:command:response")
            let envelope = try #require(frame["payload"] as? [String: Any])
            #expect(envelope["payload"] as? String
                == #"{"jsonrpc":"2.0","id":"r-1","result":null,"error":{"code":-32603,"message":"Unknown command namespace: notification"}}"#)
        }
        try await withNotificationSimulator(.init(shape: .contract, unknownNamespace: true)) { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.sendCommand(id: "r-1", method: "notification.markAllAsRead")
            let response = try await client.nextResponse()
            #expect(!response.payloadWasString)
            #expect(response.body["error"] as? String == "Unknown command namespace: notification")
            #expect(response.body["result"] is NSNull)
        }
    }

    @Test("unknown action and other namespaces are JSON-RPC errors -32603")
    func unknownActionAndNamespace() async throws {
        try await withNotificationSimulator(Self.desktop) { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.sendCommand(id: "a", method: "notification.bogus")
            let action = try await client.nextResponse()
            #expect((action.body["error"] as? [String: Any])?["message"] as? String == "Unknown action: bogus")
            #expect((action.body["error"] as? [String: Any])?["code"] as? Int == -32603)
            try client.sendCommand(id: "b", method: "clipboard.get")
            let namespace = try await client.nextResponse()
            #expect((namespace.body["error"] as? [String: Any])?["message"] as? String == "Unknown command namespace: clipboard")
        }
    }

    @Test("desktop markAsRead: {notificationId} alone marks ALL read (\"all\"); with `id` too only that one")
    func desktopMarkAsRead() async throws {
        try await withNotificationSimulator(Self.desktop) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let target = "notif-1795311120000-2c3d4e5f"
            let one = try await client.call("notification.markAsRead", ["notificationId": target, "id": target])
            #expect(one["success"] as? Bool == true && one["markedCount"] as? Int == 1)
            #expect(sim.notification(id: target)?.read == true)
            #expect(sim.notification(id: target)?.readAt != nil)
            #expect(sim.unreadCount() == 1)
            let command = try #require(sim.commands().last)
            #expect(command.stringParam("notificationId") == target && command.stringParam("id") == target)
            #expect(Set(command.paramKeys) == ["notificationId", "id"]) // JSONSerialization picks the order

            let all = try await client.call("notification.markAsRead", ["notificationId": "notif-1795311060000-1b2c3d4e-x"])
            #expect(all["markedCount"] as? String == "all")
            #expect(sim.unreadCount() == 0)
        }
    }

    @Test("contract markAsRead reads notificationId; missing → in-band error")
    func contractMarkAsRead() async throws {
        try await withNotificationSimulator(Self.contract) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let one = try await client.call("notification.markAsRead", ["notificationId": "notif-1795311060000-1b2c3d4e"])
            #expect(one["markedCount"] as? Int == 1)
            #expect(sim.unreadCount() == 1)
            let missing = try await client.call("notification.markAsRead")
            #expect(missing["success"] as? Bool == false && missing["error"] as? String == "notificationId required")
            let all = try await client.call("notification.markAllAsRead")
            #expect(all["success"] as? Bool == true && all["markedCount"] as? Int == 1)
        }
    }

    @Test("getHistory: desktop {items: raw rows, total}; contract {success, notifications, total, unreadCount}")
    func history() async throws {
        try await withNotificationSimulator(Self.desktop) { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let result = try await client.call("notification.getHistory", ["limit": 2, "offset": 0, "unreadOnly": false])
            #expect(result["success"] == nil && result["notifications"] == nil)
            #expect(result["total"] as? Int == 3)
            let items = try #require(result["items"] as? [[String: Any]])
            #expect(items.map { $0["title"] as? String } == ["Build done", "Review requested"])
            let first = try #require(items.first)
            #expect(first["id"] as? String == "notif-1795311120000-2c3d4e5f")
            #expect(first["read"] as? Int == 0 && first["sent_to_mobile"] as? Int == 1)
            #expect(first["urgency"] as? String == "critical")
            #expect(first["data"] as? String == #"{"url":"https://example.invalid/ci/42"}"#)
            #expect(first["actions"] as? String == "[]")
            #expect(first["created_at"] is Int && first["expires_at"] is Int && first["icon"] is NSNull)
            let unread = try await client.call("notification.getHistory", ["unreadOnly": true])
            #expect(unread["total"] as? Int == 2)
        }
        try await withNotificationSimulator(Self.contract) { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let result = try await client.call("notification.getHistory", ["limit": 50, "offset": 1, "unreadOnly": false])
            #expect(result["success"] as? Bool == true)
            #expect(result["total"] as? Int == 3 && result["unreadCount"] as? Int == 2)
            let items = try #require(result["notifications"] as? [[String: Any]])
            #expect(items.map { $0["title"] as? String } == ["Review requested", "Backup complete"])
            let backup = try #require(items.last)
            #expect(backup["read"] as? Bool == true && backup["readAt"] is Int)
            #expect(backup["priority"] as? String == "low" && backup["source"] as? String == "pc")
            #expect(backup["createdAt"] is Int)
        }
    }

    @Test("send: desktop {success, id, timestamp} / quiet_hours / type_disabled; contract {notificationId, silenced}")
    func send() async throws {
        try await withNotificationSimulator(Self.desktop) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let sent = try await client.call("notification.send", ["title": "Hi", "body": "there", "priority": "high", "respectQuietHours": true])
            let id = try #require(sent["id"] as? String)
            #expect(sent["success"] as? Bool == true && sent["notificationId"] == nil && sent["silenced"] == nil)
            #expect(sent["timestamp"] is Int)
            #expect(id.hasPrefix("notif-") && id.split(separator: "-").last?.count == 8)
            #expect(sim.notification(id: id)?.source == "local")
            #expect(sim.notification(id: id)?.urgency == "normal") // priority is ignored

            _ = try await client.call("notification.updateSettings", ["filters": ["app": false]])
            let filtered = try await client.call("notification.send", ["title": "Hi", "body": "there"])
            #expect(filtered["success"] as? Bool == false && filtered["reason"] as? String == "type_disabled")
            #expect(sim.settings().filters["app"] == false)
        }
        try await withNotificationSimulator(.init(shape: .desktop, quietHours: .allDay)) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let quiet = try await client.call("notification.send", ["title": "Hi", "body": "there", "respectQuietHours": false])
            #expect(quiet["success"] as? Bool == false && quiet["reason"] as? String == "quiet_hours")
            #expect(sim.notifications().count == 3)
        }
        try await withNotificationSimulator(.init(shape: .contract, quietHours: .allDay)) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let silenced = try await client.call("notification.send", ["title": "Hi", "body": "there", "priority": "high", "respectQuietHours": true])
            let id = try #require(silenced["notificationId"] as? String)
            #expect(silenced["success"] as? Bool == true && silenced["silenced"] as? Bool == true)
            #expect(sim.notification(id: id)?.priority == "high")
            let loud = try await client.call("notification.send", ["title": "Hi", "body": "there", "priority": "urgent", "respectQuietHours": false])
            #expect(loud["silenced"] as? Bool == false)
        }
    }

    @Test("settings: desktop nested, flat keys ignored; contract flat")
    func settings() async throws {
        try await withNotificationSimulator(Self.desktop) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let settings = try await client.call("notification.getSettings")
            #expect(settings["quietHoursEnabled"] == nil && settings["timestamp"] is Int)
            let quiet = try #require(settings["quietHours"] as? [String: Any])
            #expect(quiet["enabled"] as? Bool == false && quiet["start"] as? String == "22:00" && quiet["end"] as? String == "08:00")
            #expect((settings["filters"] as? [String: Any])?.count == 5)

            let ignored = try await client.call("notification.updateSettings", ["quietHoursEnabled": true, "soundEnabled": false])
            #expect(ignored["success"] as? Bool == true)
            #expect(sim.settings().quietHoursEnabled == false && sim.settings().soundEnabled == false)
            let nested = try await client.call("notification.updateSettings", ["quietHours": ["enabled": true, "start": "23:00"]])
            #expect(((nested["settings"] as? [String: Any])?["quietHours"] as? [String: Any])?["start"] as? String == "23:00")
            #expect(sim.settings().quietHoursEnabled && sim.settings().quietHoursEnd == "08:00")
        }
        try await withNotificationSimulator(Self.contract) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let settings = try await client.call("notification.getSettings")
            #expect(Set(settings.keys) == ["enabled", "quietHoursEnabled", "quietHoursStart", "quietHoursEnd",
                                           "soundEnabled", "vibrationEnabled", "showPreview"])
            let updated = try await client.call("notification.updateSettings", ["quietHoursEnabled": true, "quietHoursStart": "21:30"])
            #expect((updated["settings"] as? [String: Any])?["quietHoursStart"] as? String == "21:30")
            #expect(sim.settings().quietHoursEnabled)
            let empty = try await client.call("notification.updateSettings")
            #expect(empty["success"] as? Bool == false)
        }
    }

    @Test("delete, clearAll, clearHistory, broadcast and sendToMobile in the desktop shape")
    func deletionAndDesktopSends() async throws {
        try await withNotificationSimulator(Self.desktop) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            #expect(try await client.call("notification.delete")["error"] as? String == "notificationId required")
            #expect(try await client.call("notification.delete", ["notificationId": "nope"])["error"] as? String == "NOT_FOUND")
            #expect(try await client.call("notification.delete", ["notificationId": "notif-1795311000000-0a1b2c3d"])["success"] as? Bool == true)
            #expect(sim.notifications().count == 2)

            let broadcastFailure = try await client.call("notification.broadcast", ["title": "", "body": "x"])
            #expect(broadcastFailure["error"] as? String == "title required" && broadcastFailure["deliveredCount"] as? Int == 0)
            let broadcast = try await client.call("notification.broadcast", ["title": "All", "body": "x"])
            #expect(broadcast["success"] as? Bool == true && broadcast["id"] is String && broadcast["deliveredCount"] as? Int == 0)
            let toMobile = try await client.call("notification.sendToMobile", ["title": "T", "body": "B", "deviceId": "m1"])
            #expect(toMobile["success"] as? Bool == true && toMobile["id"] is String && toMobile["delivered"] == nil)
            // The real desktop never pushes (§0).
            #expect(try await client.count(type: "message", after: .milliseconds(100)) == 0)

            let cleared = try await client.call("notification.clearHistory", ["type": "message"])
            #expect(cleared["deletedCount"] as? Int == 1 && cleared["timestamp"] is Int)
            #expect(try await client.call("notification.clearAll")["clearedCount"] as? Int == 3)
            #expect(try await client.call("notification.getUnreadCount")["count"] as? Int == 0)
        }
    }

    @Test("contract sendToMobile and broadcast push notification.received to mobiles and count deliveries")
    func contractPushes() async throws {
        try await withNotificationSimulator(.init(shape: .contract, pushFamilies: [.flat])) { _, url in
            let caller = try await NotificationWSClient.registered(url, as: "m1")
            let other = try await NotificationWSClient.registered(url, as: "m2")
            let sent = try await caller.call("notification.sendToMobile", ["title": "T", "body": "B", "deviceId": "m2", "data": ["k": "v"]])
            #expect(sent["delivered"] as? Bool == true && sent["deviceId"] as? String == "m2")
            let event = try await other.nextMessage(envelope: "chainlesschain:event")
            let fields = try #require((event["payload"] as? [String: Any])?["payload"] as? [String: Any])
            #expect(fields["event"] as? String == "notification.received" && fields["title"] as? String == "T")
            #expect((fields["data"] as? [String: Any])?["k"] as? String == "v")

            let broadcast = try await caller.call("notification.broadcast", ["title": "All", "body": "x"])
            #expect(broadcast["deliveredCount"] as? Int == 2 && broadcast["failedCount"] as? Int == 0)
            _ = try await caller.nextMessage(envelope: "chainlesschain:event")
            _ = try await other.nextMessage(envelope: "chainlesschain:event")

            let missed = try await caller.call("notification.sendToMobile", ["title": "T", "body": "B", "deviceId": "gone"])
            #expect(missed["delivered"] as? Bool == false)
        }
    }

    @Test("duplicateResponses: each response arrives twice, the twin later")
    func duplicateResponses() async throws {
        let options = NotificationSimulator.Options(shape: .desktop, duplicateResponses: true, duplicateDelay: .milliseconds(150))
        try await withNotificationSimulator(options) { _, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.sendCommand(id: "r-1", method: "notification.getUnreadCount")
            let first = try await client.nextResponse()
            let second = try await client.nextResponse()
            // Both copies arrive (the twin after the first; its delay is not timed here: on a
            // loaded machine a timed assertion only measures the machine).
            #expect(first.body["id"] as? String == "r-1" && second.body["id"] as? String == "r-1")
            #expect(try await client.count(type: "message", after: .milliseconds(250)) == 0)
        }
    }

    @Test("a repeated request id is dropped silently (one response); responseDelay delays the answer")
    func requestDedupAndDelay() async throws {
        try await withNotificationSimulator(.init(responseDelay: .milliseconds(150))) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            let start = ContinuousClock.now
            try client.sendCommand(id: "same", method: "notification.markAllAsRead")
            try client.sendCommand(id: "same", method: "notification.markAllAsRead", innerAsString: true)
            let response = try await client.nextResponse()
            #expect(ContinuousClock.now - start >= .milliseconds(150))
            #expect((response.body["result"] as? [String: Any])?["markedCount"] as? Int == 2)
            #expect(try await client.count(type: "message", after: .milliseconds(300)) == 0)
            let commands = sim.commands()
            #expect(commands.map(\.duplicate) == [false, true])
            #expect(commands.map(\.payloadWasString) == [false, true])
        }
    }

    @Test("an inner payload sent as a JSON string is accepted (§2.1)")
    func stringInnerPayload() async throws {
        try await withNotificationSimulator(Self.desktop) { sim, url in
            let client = try await NotificationWSClient.registered(url, as: "m1")
            try client.sendCommand(id: "s-1", method: "notification.getUnreadCount", innerAsString: true)
            let response = try await client.nextResponse()
            #expect(response.payloadWasString && response.body["id"] as? String == "s-1")
            #expect(sim.commands().first?.payloadWasString == true)
        }
    }
}
