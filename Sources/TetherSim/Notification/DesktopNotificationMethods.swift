import Foundation

/// The desktop's `notification` namespace (notes §1): the 11 client methods plus `clearHistory`,
/// in either shape. Pure: a request and the store in, an outcome and the pushes to make out.
struct DesktopNotificationMethods {
    /// A `notification.received` a `.contract` desktop sends for `sendToMobile`/`broadcast`.
    struct Push: Sendable, Equatable {
        var to: String
        var fields: [WireJSON.Member]
    }

    struct Handled: Sendable {
        var outcome: NotificationEnvelope.Outcome
        var pushes: [Push] = []
    }

    /// JSON-RPC code the mobile path gives thrown handler errors and unknown namespaces.
    static let internalError = -32603

    let shape: NotificationSimulator.Shape
    let unknownNamespace: Bool
    /// Mobile peers online on the relay right now (push targets and delivery counts).
    let onlineMobiles: [String]
    let date: Date

    private var now: Int { NotificationStore.nowMS(date) }

    func handle(method: String, params: WireJSON, store: inout NotificationStore) -> Handled {
        let namespace = method.split(separator: ".", maxSplits: 1).first.map(String.init) ?? method
        // `routeMobileCommand` knows system, ai, conversation, …, but not `notification` (§0); the
        // simulator implements no other namespace, so those fail the same way.
        guard namespace == "notification", !unknownNamespace else {
            return Handled(outcome: .failure(code: Self.internalError, message: "Unknown command namespace: \(namespace)"))
        }
        let action = String(method.dropFirst("notification.".count))
        let params = params.wireIsObject ? params : [:]
        switch action {
        case "send": return send(params, &store)
        case "sendToMobile": return sendToMobile(params, &store)
        case "broadcast": return broadcast(params, &store)
        case "getHistory": return Handled(outcome: .result(history(params, store)))
        case "markAsRead": return Handled(outcome: .result(markAsRead(params, &store)))
        case "markAllAsRead":
            return Handled(outcome: .result(["success": true, "markedCount": .int(store.markRead(ids: nil, now: now))]))
        case "delete": return Handled(outcome: .result(delete(params, &store)))
        case "clearAll":
            let cleared = store.rows.count
            store.rows.removeAll()
            return Handled(outcome: .result(["success": true, "clearedCount": .int(cleared)]))
        case "getUnreadCount":
            return Handled(outcome: .result(["success": true, "count": .int(store.unreadCount(now: now))]))
        case "getSettings":
            var settings = settingsJSON(store.settings)
            if shape == .desktop { settings["timestamp"] = .int(now) }
            return Handled(outcome: .result(settings))
        case "updateSettings": return Handled(outcome: .result(updateSettings(params, &store)))
        case "clearHistory": return Handled(outcome: .result(clearHistory(params, &store)))
        default:
            return Handled(outcome: .failure(code: Self.internalError, message: "Unknown action: \(action)"))
        }
    }

    // MARK: - Sending

    private func send(_ params: WireJSON, _ store: inout NotificationStore) -> Handled {
        let title = params["title"]?.stringValue ?? ""
        let body = params["body"]?.stringValue ?? ""
        switch shape {
        case .desktop:
            // Reads {title, body, icon, type, urgency, actions, data, silent}; ignores priority and respectQuietHours.
            if store.isQuietHours(at: date) {
                return Handled(outcome: .result(["success": false, "reason": "quiet_hours"]))
            }
            let type = params["type"]?.stringValue ?? "app"
            if store.settings.filters[type]?.wireBool == false {
                return Handled(outcome: .result(["success": false, "reason": "type_disabled"]))
            }
            let urgency = params["urgency"]?.stringValue ?? "normal"
            let row = store.insert(
                type: type, title: title, body: body, icon: params["icon"]?.stringValue, urgency: urgency,
                priority: NotificationStore.priority(forUrgency: urgency), actions: params["actions"],
                data: params["data"], source: "local", sentToMobile: false, now: now
            )
            return Handled(outcome: .result(["success": true, "id": .string(row.id), "timestamp": .int(now)]))
        case .contract:
            guard !title.isEmpty else {
                return Handled(outcome: .result(["success": false, "error": "title required", "timestamp": .int(now)]))
            }
            let priority = params["priority"]?.stringValue ?? "normal"
            let silenced = (params["respectQuietHours"]?.wireBool ?? true) && store.isQuietHours(at: date)
            let row = store.insert(
                type: "app", title: title, body: body, icon: params["icon"]?.stringValue,
                urgency: NotificationStore.urgency(forPriority: priority), priority: priority,
                source: "local", sentToMobile: false, now: now
            )
            return Handled(outcome: .result([
                "success": true, "notificationId": .string(row.id), "silenced": .bool(silenced), "timestamp": .int(now),
            ]))
        }
    }

    private func sendToMobile(_ params: WireJSON, _ store: inout NotificationStore) -> Handled {
        let title = params["title"]?.stringValue ?? ""
        let body = params["body"]?.stringValue ?? ""
        let data = stringMap(params["data"])
        switch shape {
        case .desktop:
            // Reads `targetDevices`, not `deviceId`; emits an internal event nobody listens to (§0): no push.
            let row = store.insert(
                type: "app", title: title, body: body, urgency: "normal", priority: "normal",
                data: params["data"], source: "pc", sentToMobile: true, now: now
            )
            return Handled(outcome: .result(["success": true, "id": .string(row.id), "timestamp": .int(now)]))
        case .contract:
            guard !title.isEmpty else {
                return Handled(outcome: .result(["success": false, "delivered": false, "error": "title required"]))
            }
            let deviceID = params["deviceId"]?.stringValue
            let row = store.insert(
                type: "app", title: title, body: body, urgency: "normal", priority: "normal",
                data: data.map(WireJSON.sortedStringMap), source: "pc", sentToMobile: true, now: now
            )
            let targets = deviceID.map { [$0] } ?? onlineMobiles
            let delivered = targets.contains { onlineMobiles.contains($0) }
            var result: WireJSON = ["success": true, "delivered": .bool(delivered)]
            if let deviceID { result["deviceId"] = .string(deviceID) }
            return Handled(outcome: .result(result), pushes: targets.map { Push(to: $0, fields: fields(of: row, data: data)) })
        }
    }

    private func broadcast(_ params: WireJSON, _ store: inout NotificationStore) -> Handled {
        guard let title = params["title"]?.stringValue, !title.isEmpty else {
            return Handled(outcome: .result([
                "success": false, "deliveredCount": 0, "failedCount": 0, "error": "title required",
            ]))
        }
        let body = params["body"]?.stringValue ?? ""
        let row = store.insert(
            type: "app", title: title, body: body, urgency: "normal", priority: "normal",
            source: "pc", sentToMobile: true, now: now
        )
        switch shape {
        case .desktop:
            // Counts are placeholders; `targetDevices:null, broadcast:true` goes to no listener.
            return Handled(outcome: .result([
                "success": true, "deliveredCount": 0, "failedCount": 0, "id": .string(row.id), "timestamp": .int(now),
            ]))
        case .contract:
            return Handled(
                outcome: .result(["success": true, "deliveredCount": .int(onlineMobiles.count), "failedCount": 0]),
                pushes: onlineMobiles.map { Push(to: $0, fields: fields(of: row, data: nil)) }
            )
        }
    }

    private func fields(of row: NotificationRow, data: [String: String]?) -> [WireJSON.Member] {
        NotificationEnvelope.receivedFields(
            notificationID: row.id, title: row.title, body: row.body, priority: row.priority,
            source: "pc", timestamp: row.createdAt, data: data
        )
    }

    // MARK: - History

    private func history(_ params: WireJSON, _ store: NotificationStore) -> WireJSON {
        let limit = params["limit"]?.wireInt ?? 50
        let offset = params["offset"]?.wireInt ?? 0
        let unreadOnly = params["unreadOnly"]?.wireBool ?? false
        var rows = store.live(now: now)
        if unreadOnly { rows = rows.filter { !$0.read } }
        if shape == .desktop {
            if let type = params["type"]?.stringValue { rows = rows.filter { $0.type == type } }
            if let start = params["startDate"]?.wireInt { rows = rows.filter { $0.createdAt >= start } }
            if let end = params["endDate"]?.wireInt { rows = rows.filter { $0.createdAt <= end } }
        }
        let page = Array(rows.dropFirst(max(offset, 0)).prefix(max(limit, 0)))
        switch shape {
        case .desktop:
            return ["items": .array(page.map(rawRow)), "total": .int(rows.count)]
        case .contract:
            return [
                "success": true,
                "notifications": .array(page.map(historyItem)),
                "total": .int(rows.count),
                "unreadCount": .int(store.unreadCount(now: now)),
            ]
        }
    }

    /// Raw SQLite columns: JSON columns as text, booleans as 0/1.
    private func rawRow(_ row: NotificationRow) -> WireJSON {
        func text(_ value: String?) -> WireJSON { value.map(WireJSON.string) ?? .null }
        return [
            "id": .string(row.id), "type": .string(row.type), "title": .string(row.title), "body": .string(row.body),
            "icon": text(row.icon), "app_name": text(row.appName), "app_id": text(row.appID),
            "urgency": .string(row.urgency), "group_key": text(row.groupKey),
            "actions": text(row.actions?.serialized), "data": text(row.data?.serialized),
            "source": .string(row.source), "read": .int(row.read ? 1 : 0), "sent_to_mobile": .int(row.sentToMobile ? 1 : 0),
            "created_at": .int(row.createdAt), "expires_at": .int(row.expiresAt),
        ]
    }

    /// The client's `HistoryItem {id, title, body, priority, read, source, createdAt, readAt?, data?}`.
    private func historyItem(_ row: NotificationRow) -> WireJSON {
        var item: WireJSON = [
            "id": .string(row.id), "title": .string(row.title), "body": .string(row.body),
            "priority": .string(row.priority), "read": .bool(row.read),
            "source": .string(row.source == "mobile" ? "mobile" : "pc"), "createdAt": .int(row.createdAt),
        ]
        if let readAt = row.readAt { item["readAt"] = .int(readAt) }
        if let data = stringMap(row.data) { item["data"] = .sortedStringMap(data) }
        return item
    }

    // MARK: - Read state and deletion

    private func markAsRead(_ params: WireJSON, _ store: inout NotificationStore) -> WireJSON {
        switch shape {
        case .desktop:
            // Reads `id` or `ids[]`, never `notificationId`; with neither it marks everything read.
            if let id = params["id"]?.stringValue {
                return ["success": true, "markedCount": .int(store.markRead(ids: [id], now: now))]
            }
            if let ids = params["ids"]?.arrayValue {
                return ["success": true, "markedCount": .int(store.markRead(ids: ids.compactMap(\.stringValue), now: now))]
            }
            _ = store.markRead(ids: nil, now: now)
            return ["success": true, "markedCount": "all"]
        case .contract:
            guard let id = params["notificationId"]?.stringValue, !id.isEmpty else {
                return ["success": false, "markedCount": 0, "error": "notificationId required"]
            }
            return ["success": true, "markedCount": .int(store.markRead(ids: [id], now: now))]
        }
    }

    private func delete(_ params: WireJSON, _ store: inout NotificationStore) -> WireJSON {
        guard let id = params["notificationId"]?.stringValue, !id.isEmpty else {
            return ["success": false, "error": "notificationId required"]
        }
        guard let index = store.rows.firstIndex(where: { $0.id == id }) else {
            return ["success": false, "error": "NOT_FOUND"]
        }
        store.rows.remove(at: index)
        return ["success": true]
    }

    private func clearHistory(_ params: WireJSON, _ store: inout NotificationStore) -> WireJSON {
        let before = params["before"]?.wireInt
        let type = params["type"]?.stringValue
        let count = store.rows.count
        store.rows.removeAll { row in
            (before.map { row.createdAt < $0 } ?? true) && (type.map { row.type == $0 } ?? true)
        }
        return ["success": true, "deletedCount": .int(count - store.rows.count), "timestamp": .int(now)]
    }

    // MARK: - Settings

    private func settingsJSON(_ settings: DesktopSettings) -> WireJSON {
        switch shape {
        case .desktop:
            return [
                "enabled": .bool(settings.enabled), "soundEnabled": .bool(settings.soundEnabled),
                "vibrationEnabled": .bool(settings.vibrationEnabled), "filters": settings.filters,
                "quietHours": [
                    "enabled": .bool(settings.quietHoursEnabled),
                    "start": .string(settings.quietHoursStart), "end": .string(settings.quietHoursEnd),
                ],
            ]
        case .contract:
            return [
                "enabled": .bool(settings.enabled), "quietHoursEnabled": .bool(settings.quietHoursEnabled),
                "quietHoursStart": .string(settings.quietHoursStart), "quietHoursEnd": .string(settings.quietHoursEnd),
                "soundEnabled": .bool(settings.soundEnabled), "vibrationEnabled": .bool(settings.vibrationEnabled),
                "showPreview": .bool(settings.showPreview),
            ]
        }
    }

    private func updateSettings(_ params: WireJSON, _ store: inout NotificationStore) -> WireJSON {
        var settings = store.settings
        switch shape {
        case .desktop:
            // Merges only enabled, soundEnabled, vibrationEnabled, filters{}, quietHours{}; flat
            // `quietHours*` keys are silently ignored.
            if let value = params["enabled"]?.wireBool { settings.enabled = value }
            if let value = params["soundEnabled"]?.wireBool { settings.soundEnabled = value }
            if let value = params["vibrationEnabled"]?.wireBool { settings.vibrationEnabled = value }
            for member in params["filters"]?.wireMembers ?? [] { settings.filters[member.key] = member.value }
            if let quiet = params["quietHours"] {
                if let value = quiet["enabled"]?.wireBool { settings.quietHoursEnabled = value }
                if let value = quiet["start"]?.stringValue { settings.quietHoursStart = value }
                if let value = quiet["end"]?.stringValue { settings.quietHoursEnd = value }
            }
        case .contract:
            let known = ["enabled", "quietHoursEnabled", "quietHoursStart", "quietHoursEnd",
                         "soundEnabled", "vibrationEnabled", "showPreview"]
            guard params.wireMembers.contains(where: { known.contains($0.key) }) else {
                return ["success": false, "error": "no settings to update"]
            }
            if let value = params["enabled"]?.wireBool { settings.enabled = value }
            if let value = params["quietHoursEnabled"]?.wireBool { settings.quietHoursEnabled = value }
            if let value = params["quietHoursStart"]?.stringValue { settings.quietHoursStart = value }
            if let value = params["quietHoursEnd"]?.stringValue { settings.quietHoursEnd = value }
            if let value = params["soundEnabled"]?.wireBool { settings.soundEnabled = value }
            if let value = params["vibrationEnabled"]?.wireBool { settings.vibrationEnabled = value }
            if let value = params["showPreview"]?.wireBool { settings.showPreview = value }
        }
        store.settings = settings
        return ["success": true, "settings": settingsJSON(settings)]
    }

    /// A string map from a `data` value (non-string values dropped); nil when it is no object.
    private func stringMap(_ value: WireJSON?) -> [String: String]? {
        guard let value, value.wireIsObject else { return nil }
        var map: [String: String] = [:]
        for member in value.wireMembers {
            if let text = member.value.stringValue { map[member.key] = text }
        }
        return map
    }
}
