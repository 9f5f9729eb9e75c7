import TetherCore
import TetherStreaming

/// Reads each method's result into what the CLI prints, accepting both shapes: the client
/// contract's models and what the desktop's `notification-handler.js` actually returns
/// (protocols/notification.md §1). Pure: a result in, a domain value or a `TetherError` out.
///
/// Mutations answer a JSON object whose `status` says what happened: `ok`, `sent`, `queued`,
/// `silenced` or `quiet_hours`; keys are snake_case, as in events.
enum NotificationResponseDecoder {
    /// The peer a result came from, for messages.
    struct Context: Sendable {
        var method: NotificationMethod
        var desktop: String
    }

    // MARK: - The JSON-RPC layer

    static let unknownNamespace = "Unknown command namespace: notification"

    /// The result of a response, or the error it carries as a `TetherError`. A response with
    /// neither reads as an empty object (scalar and null results happen on the Android path).
    static func result(of response: NotificationWire.Response, _ context: Context) throws(TetherError) -> JSONValue {
        if let error = response.error { throw remoteError(error, context) }
        guard let result = response.result, !result.isNull else { return .object([:]) }
        return result
    }

    static func remoteError(_ error: NotificationWire.RemoteError, _ context: Context) -> TetherError {
        let method = context.method.rawValue
        if error.message.contains(unknownNamespace) {
            return TetherError(
                .unsupported,
                "the desktop (peer \(context.desktop)) does not serve notification commands on the relay path: it answered \(method) with \"\(error.message)\"",
                hint: "today's ChainlessChain desktop routes `notification.*` only inside the app (IPC, web shell), not for peers that reach it through the signaling relay. Tether speaks the mobile client contract; it works with a desktop that routes the `notification` namespace")
        }
        if error.code == -32601 || error.message.hasPrefix("Unknown action") || error.message.contains("Method not found") {
            return TetherError(.unsupported, "the desktop (peer \(context.desktop)) does not know \(method): \(error.message)",
                               hint: "the desktop's notification skill is older or newer than the client contract Tether speaks")
        }
        return TetherError(.failed, "the desktop (peer \(context.desktop)) answered \(method) with error \(error)")
    }

    /// An in-band failure (`success: false` with `error` or `reason`, or an `error` without a
    /// `success`). A missing `success` alone is not a failure: `getHistory` and `getSettings`
    /// on the desktop never send one.
    static func inBandFailure(_ result: JSONValue) -> String? {
        let error = result["error"].flatMap(NotificationWire.remoteError)?.message
        switch NotificationValues.bool(result["success"]) {
        case false?: return error ?? result["reason"]?.stringish ?? "the desktop reported a failure"
        case true?: return nil
        case nil: return error
        }
    }

    private static func failure(_ message: String, _ context: Context, code: TetherError.Code = .failed,
                                hint: String? = nil) -> TetherError {
        TetherError(code, "\(context.method.rawValue) failed on the desktop (peer \(context.desktop)): \(message)", hint: hint)
    }

    private static func requireSuccess(_ result: JSONValue, _ context: Context) throws(TetherError) {
        if let message = inBandFailure(result) { throw failure(message, context) }
    }

    // MARK: - Reads

    /// `getHistory`: contract `{success, notifications, total, unreadCount}`, desktop
    /// `{items: [row], total}`. `unreadOnly` and `limit` are applied here too, since the desktop
    /// ignores `unreadOnly`.
    static func history(_ result: JSONValue, unreadOnly: Bool, limit: Int?, _ context: Context) throws(TetherError) -> [Notification] {
        try requireSuccess(result, context)
        let items = result["notifications"]?.array ?? result["items"]?.array ?? result.array ?? []
        var notifications = items.compactMap(notification(fromHistoryItem:))
        if unreadOnly { notifications.removeAll { $0.read == true } }
        if let limit, notifications.count > limit { notifications = Array(notifications.prefix(limit)) }
        return notifications
    }

    /// A history row: the contract's `HistoryItem` or the desktop's raw SQLite columns.
    static func notification(fromHistoryItem item: JSONValue) -> Notification? {
        guard item.object != nil, let id = (item["id"] ?? item["notificationId"])?.stringish else { return nil }
        var extra = JSONObject()
        if let source = item["source"]?.string { extra["source"] = .string(source) }
        if let type = item["type"]?.string { extra["type"] = .string(type) }
        if let readAt = NotificationValues.number(item["readAt"] ?? item["read_at"]) { extra["read_at"] = .double(readAt) }
        if let data = NotificationWire.object(item["data"]) { extra["data"] = data }
        for (wire, key) in [("icon", "icon"), ("app_name", "app_name"), ("appName", "app_name")] {
            if let value = item[wire]?.string, extra[key] == nil { extra[key] = .string(value) }
        }
        if let sent = NotificationValues.bool(item["sent_to_mobile"] ?? item["sentToMobile"]) { extra["sent_to_mobile"] = .bool(sent) }
        if let expires = NotificationValues.number(item["expires_at"] ?? item["expiresAt"]) { extra["expires_at"] = .double(expires) }
        return Notification(
            id: id, title: item["title"]?.stringish ?? "", body: item["body"]?.stringish ?? "",
            priority: NotificationValues.priority(item["priority"], urgency: item["urgency"]) ?? "normal",
            read: NotificationValues.bool(item["read"] ?? item["isRead"]) ?? false,
            createdAt: NotificationValues.number(item["createdAt"] ?? item["created_at"] ?? item["timestamp"]),
            extra: extra)
    }

    /// `getUnreadCount`: `{success, count}` (a failure is `{success: false, count: 0}`), or a
    /// bare number, or Android's `{value}` wrapping of one. A count that is not a whole number
    /// from 0 up is bad data.
    static func unreadCount(_ result: JSONValue, _ context: Context) throws(TetherError) -> Int {
        try requireSuccess(result, context)
        guard let number = NotificationValues.number(result["count"] ?? result["unreadCount"] ?? result["value"] ?? result) else {
            throw failure("the answer has no count: \(result.serialized.prefix(200))", context, code: .badData)
        }
        // Not `Int(number)`, which traps on 1e300 or "nan" (found by Fuzz/FuzzNotificationWire).
        guard let count = Int(exactly: number), count >= 0 else {
            throw failure("the answer's count is not a count: \(result.serialized.prefix(200))", context, code: .badData)
        }
        return count
    }

    /// `getSettings`: the contract's flat model, or the desktop's nested
    /// `{enabled, soundEnabled, vibrationEnabled, filters, quietHours{enabled,start,end}}`.
    /// Keys the desktop did not send are left out, not defaulted.
    static func settings(_ result: JSONValue, _ context: Context) throws(TetherError) -> JSONObject {
        try requireSuccess(result, context)
        let source = result["settings"]?.object.map(JSONValue.object) ?? result
        return normalizedSettings(source)
    }

    static func normalizedSettings(_ value: JSONValue) -> JSONObject {
        let quiet = value["quietHours"]
        var settings = JSONObject()
        let flags: [(String, JSONValue?)] = [
            ("enabled", value["enabled"]), ("sound_enabled", value["soundEnabled"]),
            ("vibration_enabled", value["vibrationEnabled"]), ("show_preview", value["showPreview"]),
            ("quiet_hours_enabled", value["quietHoursEnabled"] ?? quiet?["enabled"]),
        ]
        for (key, wire) in flags { if let flag = NotificationValues.bool(wire) { settings[key] = .bool(flag) } }
        if let start = (value["quietHoursStart"] ?? quiet?["start"])?.string { settings["quiet_hours_start"] = .string(start) }
        if let end = (value["quietHoursEnd"] ?? quiet?["end"])?.string { settings["quiet_hours_end"] = .string(end) }
        if let filters = value["filters"]?.object { settings["filters"] = .object(filters) }
        return settings
    }

    /// `updateSettings`: `{success, settings?}`. The desktop silently ignores the contract's flat
    /// quiet-hours keys, so each requested value is compared with what comes back and any the
    /// desktop did not apply is named in `warnings`.
    static func settingsUpdate(_ result: JSONValue, requested: NotificationSettingsChange, _ context: Context) throws(TetherError) -> JSONObject {
        try requireSuccess(result, context)
        var answer: JSONObject = ["status": "ok", "changed": .object(requested.values)]
        guard let returned = result["settings"], returned.object != nil else { return answer }
        let settings = normalizedSettings(returned)
        answer["settings"] = .object(settings)
        let warnings = requested.values.compactMap { entry -> JSONValue? in
            guard let now = settings[entry.key], now != entry.value else { return nil }
            return .string("the desktop did not apply \(entry.key)=\(entry.value.serialized) (it reports \(now.serialized))")
        }
        if !warnings.isEmpty { answer["warnings"] = .array(warnings) }
        return answer
    }

    // MARK: - Mutations

    /// `markAsRead` for one id: `{success, markedCount}`; `markedCount` is `"all"` when the desktop
    /// took its mark-everything branch (it reads `id`, not the contract's `notificationId`).
    static func markRead(_ result: JSONValue, _ context: Context) throws(TetherError) -> JSONValue {
        try requireSuccess(result, context)
        return result["markedCount"] ?? .int(1)
    }

    static func markAllRead(_ result: JSONValue, _ context: Context) throws(TetherError) -> JSONObject {
        try requireSuccess(result, context)
        return .compact(["status": "ok", "marked_count": result["markedCount"] ?? .null])
    }

    /// `delete`: `{success}`; the desktop's `NOT_FOUND` becomes `not_found`.
    static func delete(_ result: JSONValue, id: String, _ context: Context) throws(TetherError) -> JSONObject {
        if let message = inBandFailure(result) {
            if message == "NOT_FOUND" || message.lowercased().contains("not found") {
                throw TetherError(.notFound, "notification \(id) does not exist on the desktop (peer \(context.desktop))",
                                  hint: "`tether notifications list` shows what is there")
            }
            throw failure(message, context)
        }
        return ["status": "ok", "id": .string(id)]
    }

    static func clear(_ result: JSONValue, _ context: Context) throws(TetherError) -> JSONObject {
        try requireSuccess(result, context)
        return .compact(["status": "ok", "cleared_count": result["clearedCount"] ?? result["deletedCount"] ?? .null])
    }

    /// `send`: contract `{success, notificationId?, silenced, error?, timestamp}`, desktop
    /// `{success: true, id, timestamp}` or `{success: false, reason: "quiet_hours" | "type_disabled"}`.
    /// Quiet hours are an outcome, not an error: `status` is `silenced` (stored, not shown) or
    /// `quiet_hours` (not shown).
    static func send(_ result: JSONValue, priority: String, _ context: Context) throws(TetherError) -> JSONObject {
        let id = (result["notificationId"] ?? result["id"])?.stringish
        let timestamp = result["timestamp"] ?? .null
        if NotificationValues.bool(result["silenced"]) == true {
            return .compact(["status": "silenced", "id": JSONValue(id), "priority": .string(priority), "timestamp": timestamp,
                             "message": "the desktop is in quiet hours: it kept the notification without showing it"])
        }
        if NotificationValues.bool(result["success"]) == false {
            switch result["reason"]?.string {
            case "quiet_hours":
                return .compact(["status": "quiet_hours", "priority": .string(priority),
                                 "message": "the desktop is in quiet hours and did not show the notification"])
            case "type_disabled":
                throw failure("the desktop's filters turn this notification type off, so it did not show it", context,
                              hint: "`tether notifications settings` shows the filters")
            default:
                break
            }
        }
        try requireSuccess(result, context)
        return .compact(["status": "sent", "id": JSONValue(id), "priority": .string(priority), "timestamp": timestamp])
    }

    /// `sendToMobile`: contract `{success, delivered, deviceId?, error?}`, desktop
    /// `{success: true, id, timestamp}` (no delivery report, so `delivered` is left out).
    static func push(_ result: JSONValue, device: String?, _ context: Context) throws(TetherError) -> JSONObject {
        try requireSuccess(result, context)
        let delivered = NotificationValues.bool(result["delivered"])
        return .compact(["status": "sent", "id": JSONValue((result["notificationId"] ?? result["id"])?.stringish),
                         "device": JSONValue(result["deviceId"]?.stringish ?? device), "delivered": JSONValue(delivered),
                         "timestamp": result["timestamp"] ?? .null])
    }

    /// `broadcast`: `{success, deliveredCount, failedCount}` (the desktop's counts are placeholders).
    static func broadcast(_ result: JSONValue, _ context: Context) throws(TetherError) -> JSONObject {
        try requireSuccess(result, context)
        return .compact(["status": "sent", "id": JSONValue((result["notificationId"] ?? result["id"])?.stringish),
                         "delivered_count": result["deliveredCount"] ?? .null, "failed_count": result["failedCount"] ?? .null,
                         "timestamp": result["timestamp"] ?? .null])
    }
}
