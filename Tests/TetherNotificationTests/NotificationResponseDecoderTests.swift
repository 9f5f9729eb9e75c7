import Testing
import TetherCore
@testable import TetherNotification
import TetherStreaming

/// Every method's result, in the client contract's shape and in the real desktop's, read into
/// what the CLI prints.
struct NotificationResponseDecoderTests {
    typealias Decoder = NotificationResponseDecoder

    func context(_ method: NotificationMethod) -> Decoder.Context { .init(method: method, desktop: "pc-7f3a") }

    func error(_ body: () throws -> Void) -> TetherError? {
        do {
            try body()
            return nil
        } catch {
            return error as? TetherError
        }
    }

    // MARK: JSON-RPC layer

    @Test func theUnknownNamespaceAnswerIsNamedPlainly() throws {
        let response = NotificationWire.Response(id: "r", result: nil,
                                                 error: .init(code: -32603, message: "Unknown command namespace: notification"))
        let failure = error { _ = try Decoder.result(of: response, context(.getUnreadCount)) }
        #expect(failure?.code == .unsupported)
        #expect(failure?.message.contains("Unknown command namespace: notification") == true)
        #expect(failure?.message.contains("pc-7f3a") == true)
        #expect(failure?.hint?.contains("relay") == true)
    }

    @Test func otherRemoteErrors() throws {
        let unknownAction = error {
            _ = try Decoder.result(of: .init(id: "r", result: nil, error: .init(code: -32002, message: "Unknown action: getFoo")), context(.send))
        }
        #expect(unknownAction?.code == .unsupported)
        let crashed = error {
            _ = try Decoder.result(of: .init(id: "r", result: nil, error: .init(code: nil, message: "boom")), context(.send))
        }
        #expect(crashed?.code == .failed && crashed?.message.contains("boom") == true)
        // Neither result nor error: an empty object.
        #expect(try Decoder.result(of: .init(id: "r", result: JSONValue?.none, error: nil), context(.delete)) == .object([:]))
        #expect(try Decoder.result(of: .init(id: "r", result: .null, error: nil), context(.delete)) == .object([:]))
    }

    @Test func inBandFailures() {
        #expect(Decoder.inBandFailure(["success": false, "error": "x"]) == "x")
        #expect(Decoder.inBandFailure(["success": false, "reason": "quiet_hours"]) == "quiet_hours")
        #expect(Decoder.inBandFailure(["success": false, "error": ["code": "E", "message": "m"]]) == "m")
        #expect(Decoder.inBandFailure(["success": false]) == "the desktop reported a failure")
        #expect(Decoder.inBandFailure(["items": []]) == nil)  // no `success` is not a failure
        #expect(Decoder.inBandFailure(["error": "x"]) == "x")  // but an error without one is
        #expect(Decoder.inBandFailure(["success": true, "error": nil]) == nil)
    }

    // MARK: Reads

    @Test func historyInTheContractShape() throws {
        let list = try Decoder.history(try Fixture.contract("getHistory"), unreadOnly: false, limit: nil, context(.getHistory))
        #expect(list.map(\.id) == ["n-2", "n-1"])
        #expect(list[0] == Notification(id: "n-2", title: "Build done", body: "main is green", priority: "high", read: false,
                                        createdAt: 1795311063215, extra: ["source": "pc", "data": ["url": "https://example.invalid/ci/42"]]))
        #expect(list[1].read == true && list[1].extra["read_at"] == .double(1795311050000) && list[1].extra["source"] == "mobile")
    }

    @Test func historyInTheDesktopShape() throws {
        let list = try Decoder.history(try Fixture.desktop("getHistory"), unreadOnly: false, limit: nil, context(.getHistory))
        #expect(list.count == 2)
        let first = list[0]
        #expect(first.id == "notif-1795311063215-a1b2c3d4" && first.title == "Build done")
        #expect(first.priority == "urgent")  // urgency critical
        #expect(first.read == false && first.createdAt == 1795311063215)
        #expect(first.extra["data"] == ["url": "https://example.invalid/ci/42"])  // a JSON string column, parsed
        #expect(first.extra["type"] == "app" && first.extra["app_name"] == "ChainlessChain" && first.extra["sent_to_mobile"] == true)
        #expect(list[1].priority == "low" && list[1].read == true)
        // The desktop ignores unreadOnly: Tether filters, and applies the limit.
        let unread = try Decoder.history(try Fixture.desktop("getHistory"), unreadOnly: true, limit: nil, context(.getHistory))
        #expect(unread.map(\.id) == ["notif-1795311063215-a1b2c3d4"])
        #expect(try Decoder.history(try Fixture.desktop("getHistory"), unreadOnly: false, limit: 1, context(.getHistory)).count == 1)
        #expect(try Decoder.history(try Fixture.desktop("getHistory.noDatabase"), unreadOnly: false, limit: nil, context(.getHistory)).isEmpty)
        // A failure in band.
        #expect(error { _ = try Decoder.history(["success": false, "error": "db locked"], unreadOnly: false, limit: nil, context(.getHistory)) }?
            .message.contains("db locked") == true)
    }

    @Test func unreadCounts() throws {
        #expect(try Decoder.unreadCount(try Fixture.contract("getUnreadCount"), context(.getUnreadCount)) == 4)
        #expect(try Decoder.unreadCount(try Fixture.desktop("getUnreadCount"), context(.getUnreadCount)) == 3)
        #expect(try Decoder.unreadCount(7, context(.getUnreadCount)) == 7)
        #expect(try Decoder.unreadCount(["value": 2], context(.getUnreadCount)) == 2)
        #expect(error { _ = try Decoder.unreadCount(try Fixture.desktop("getUnreadCount.failed"), context(.getUnreadCount)) }?.code == .failed)
        #expect(error { _ = try Decoder.unreadCount(["success": true], context(.getUnreadCount)) }?.code == .badData)
    }

    @Test func settingsInBothShapes() throws {
        #expect(try Decoder.settings(try Fixture.contract("getSettings"), context(.getSettings)) == [
            "enabled": true, "sound_enabled": false, "vibration_enabled": true, "show_preview": true,
            "quiet_hours_enabled": true, "quiet_hours_start": "22:00", "quiet_hours_end": "07:30",
        ])
        #expect(try Decoder.settings(try Fixture.desktop("getSettings"), context(.getSettings)) == [
            "enabled": true, "sound_enabled": true, "vibration_enabled": false,
            "quiet_hours_enabled": false, "quiet_hours_start": "22:00", "quiet_hours_end": "08:00",
            "filters": ["system": true, "app": true, "message": true, "reminder": false, "alert": true],
        ])
    }

    @Test func settingsUpdates() throws {
        let change = try NotificationSettingsChange(["quiet_hours_start": "23:00", "quiet_hours_enabled": "on"])
        let contract = try Decoder.settingsUpdate(try Fixture.contract("updateSettings"), requested: change, context(.updateSettings))
        #expect(contract["status"] == "ok" && contract["warnings"] == nil)
        #expect(contract["settings"]?["quiet_hours_start"] == "23:00")
        let desktop = try Decoder.settingsUpdate(try Fixture.desktop("updateSettings"), requested: change, context(.updateSettings))
        #expect(desktop["warnings"] == nil && desktop["settings"]?["quiet_hours_enabled"] == true)
        // A desktop that dropped the values: each one is named.
        let ignored = try Decoder.settingsUpdate(try Fixture.desktop("updateSettings.ignoredFlatKeys"), requested: change, context(.updateSettings))
        #expect(ignored["warnings"]?.array?.count == 2)
        #expect(ignored["warnings"]?[0]?.string?.contains("quiet_hours_enabled=true") == true)
        // No settings in the answer: what was asked is reported.
        #expect(try Decoder.settingsUpdate(["success": true], requested: change, context(.updateSettings))
            == ["status": "ok", "changed": ["quiet_hours_enabled": true, "quiet_hours_start": "23:00"]])
    }

    // MARK: Mutations

    @Test func marking() throws {
        #expect(try Decoder.markRead(try Fixture.contract("markAsRead"), context(.markAsRead)) == 1)
        #expect(try Decoder.markRead(try Fixture.desktop("markAsRead.all"), context(.markAsRead)) == "all")
        #expect(error { _ = try Decoder.markRead(try Fixture.desktop("markAsRead.noDatabase"), context(.markAsRead)) }?
            .message.contains("Database not available") == true)
        #expect(try Decoder.markAllRead(try Fixture.desktop("markAllAsRead"), context(.markAllAsRead)) == ["status": "ok", "marked_count": 5])
        #expect(try Decoder.markAllRead(["success": true], context(.markAllAsRead)) == ["status": "ok"])
    }

    @Test func deleting() throws {
        #expect(try Decoder.delete(try Fixture.contract("delete"), id: "n-1", context(.delete)) == ["status": "ok", "id": "n-1"])
        let missing = error { _ = try Decoder.delete(try Fixture.desktop("delete.notFound"), id: "n-1", context(.delete)) }
        #expect(missing?.code == .notFound && missing?.message.contains("n-1") == true)
        #expect(error { _ = try Decoder.delete(try Fixture.desktop("delete.missingId"), id: "", context(.delete)) }?.code == .failed)
        #expect(try Decoder.clear(try Fixture.contract("clearAll"), context(.clearAll)) == ["status": "ok", "cleared_count": 7])
        #expect(try Decoder.clear(try Fixture.desktop("clearAll"), context(.clearAll)) == ["status": "ok", "cleared_count": 12])
    }

    @Test func sendingAndQuietHours() throws {
        #expect(try Decoder.send(try Fixture.contract("send"), priority: "high", context(.send))
            == ["status": "sent", "id": "n-9", "priority": "high", "timestamp": 1795311063999])
        #expect(try Decoder.send(try Fixture.desktop("send"), priority: "normal", context(.send))
            == ["status": "sent", "id": "notif-1795311063999-deadbeef", "priority": "normal", "timestamp": 1795311063999])
        let silenced = try Decoder.send(try Fixture.contract("send.silenced"), priority: "low", context(.send))
        #expect(silenced["status"] == "silenced" && silenced["id"] == "n-10")
        let quiet = try Decoder.send(try Fixture.desktop("send.quietHours"), priority: "urgent", context(.send))
        #expect(quiet["status"] == "quiet_hours" && quiet["message"] != nil)
        #expect(error { _ = try Decoder.send(try Fixture.desktop("send.typeDisabled"), priority: "normal", context(.send)) }?
            .message.contains("filters") == true)
        #expect(error { _ = try Decoder.send(try Fixture.contract("send.error"), priority: "normal", context(.send)) }?
            .message.contains("title too long") == true)
    }

    @Test func pushAndBroadcast() throws {
        #expect(try Decoder.push(try Fixture.contract("sendToMobile"), device: nil, context(.sendToMobile))
            == ["status": "sent", "device": "did:key:z6MkPhone", "delivered": true])
        // The desktop reports no delivery: `delivered` is left out rather than guessed.
        #expect(try Decoder.push(try Fixture.desktop("sendToMobile"), device: "phone-1", context(.sendToMobile))
            == ["status": "sent", "id": "notif-1795311064000-cafebabe", "device": "phone-1", "timestamp": 1795311064000])
        #expect(try Decoder.broadcast(try Fixture.contract("broadcast"), context(.broadcast))
            == ["status": "sent", "delivered_count": 2, "failed_count": 1])
        #expect(try Decoder.broadcast(try Fixture.desktop("broadcast"), context(.broadcast))["id"] == "notif-1795311064001-00c0ffee")
        #expect(error { _ = try Decoder.broadcast(try Fixture.desktop("broadcast.noTitle"), context(.broadcast)) }?
            .message.contains("title required") == true)
    }
}
