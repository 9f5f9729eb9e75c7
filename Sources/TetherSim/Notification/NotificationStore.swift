import Foundation

/// One row of the desktop's `notification_history` table (notes §1, `getHistory`).
struct NotificationRow: Sendable, Equatable {
    var id: String
    var type: String
    var title: String
    var body: String
    var icon: String?
    var appName: String?
    var appID: String?
    /// Electron urgency: `low|normal|critical`.
    var urgency: String
    /// The client's priority (`low|normal|high|urgent`), kept beside `urgency` so a `.contract`
    /// desktop hands back what it was given ("high" has no Electron urgency of its own).
    var priority: String
    var groupKey: String?
    /// `actions` and `data` are JSON text columns; nil is SQL NULL.
    var actions: WireJSON?
    var data: WireJSON?
    var source: String
    var read: Bool
    var readAt: Int?
    var sentToMobile: Bool
    var createdAt: Int
    var expiresAt: Int
    /// Insertion order (SQLite rowid), the tie-break for equal `created_at`.
    var sequence: Int
}

/// The desktop's `notification_settings` row (key "settings"), in the desktop's nested form.
struct DesktopSettings: Sendable, Equatable {
    var enabled = true
    var soundEnabled = true
    var vibrationEnabled = true
    /// Contract-only (`Settings.showPreview`); a `.desktop` desktop never reports it.
    var showPreview = true
    /// `{system, app, message, reminder, alert}`: a type whose filter is `false` is not shown.
    var filters: WireJSON = ["system": true, "app": true, "message": true, "reminder": true, "alert": true]
    var quietHoursEnabled = false
    var quietHoursStart = "22:00"
    var quietHoursEnd = "08:00"
}

/// The desktop's notification state: history rows and settings. A plain value, mutated under the
/// desktop's lock by `DesktopNotificationMethods`.
struct NotificationStore: Sendable {
    /// Rows expire 7 days after creation (`expires_at` default) and are then never listed or counted.
    static let retentionMS = 7 * 24 * 3600 * 1000

    var rows: [NotificationRow] = []
    var settings = DesktopSettings()
    private var nextSequence = 1

    init(seed: [NotificationSimulator.Seed], quietHours: NotificationSimulator.QuietHours?, now: Int) {
        if let quietHours {
            settings.quietHoursEnabled = true
            settings.quietHoursStart = quietHours.start
            settings.quietHoursEnd = quietHours.end
        }
        for item in seed {
            let created = now - Self.milliseconds(item.age)
            var row = insert(
                id: item.id,
                type: item.type,
                title: item.title,
                body: item.body,
                urgency: Self.urgency(forPriority: item.priority),
                priority: item.priority,
                data: item.data.map(WireJSON.sortedStringMap),
                source: item.source,
                sentToMobile: item.source == "pc",
                now: created
            )
            if item.read {
                row.read = true
                row.readAt = created
                update(row)
            }
        }
    }

    /// Unexpired rows, newest first (`ORDER BY created_at DESC`).
    func live(now: Int) -> [NotificationRow] {
        rows.filter { $0.expiresAt > now }.sorted {
            $0.createdAt != $1.createdAt ? $0.createdAt > $1.createdAt : $0.sequence > $1.sequence
        }
    }

    func unreadCount(now: Int) -> Int {
        rows.count { $0.expiresAt > now && !$0.read }
    }

    @discardableResult
    mutating func insert(
        id: String? = nil,
        type: String,
        title: String,
        body: String,
        icon: String? = nil,
        urgency: String,
        priority: String,
        actions: WireJSON? = nil,
        data: WireJSON? = nil,
        source: String,
        sentToMobile: Bool,
        now: Int
    ) -> NotificationRow {
        let row = NotificationRow(
            id: id ?? Self.makeID(now: now), type: type, title: title, body: body, icon: icon,
            appName: nil, appID: nil, urgency: urgency, priority: priority, groupKey: nil,
            actions: actions ?? [], data: data, source: source, read: false, readAt: nil,
            sentToMobile: sentToMobile, createdAt: now, expiresAt: now + Self.retentionMS, sequence: nextSequence
        )
        nextSequence += 1
        rows.append(row)
        return row
    }

    mutating func update(_ row: NotificationRow) {
        guard let index = rows.firstIndex(where: { $0.id == row.id }) else { return }
        rows[index] = row
    }

    /// Marks the given rows read (all unread, unexpired ones when `ids` is nil); returns the
    /// number of rows that changed, as SQLite's `changes` would.
    mutating func markRead(ids: [String]?, now: Int) -> Int {
        var changed = 0
        for index in rows.indices where !rows[index].read && rows[index].expiresAt > now {
            if let ids, !ids.contains(rows[index].id) { continue }
            rows[index].read = true
            rows[index].readAt = now
            changed += 1
        }
        return changed
    }

    /// `NotificationHandler.isQuietHours()`: minute resolution, local time; `start < end` is the
    /// window `[start, end)`, anything else wraps over midnight.
    func isQuietHours(at date: Date) -> Bool {
        guard settings.quietHoursEnabled,
              let start = Self.minutes(settings.quietHoursStart),
              let end = Self.minutes(settings.quietHoursEnd)
        else { return false }
        let parts = Calendar.current.dateComponents([.hour, .minute], from: date)
        let now = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        return start < end ? (now >= start && now < end) : (now >= start || now < end)
    }

    private static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]) else { return nil }
        return hours * 60 + minutes
    }

    /// `generateNotificationId`: `notif-<Date.now()>-<8 hex>`.
    static func makeID(now: Int) -> String {
        let hex = String(UInt32.random(in: .min ... .max), radix: 16)
        return "notif-\(now)-\(String(repeating: "0", count: 8 - hex.count))\(hex)"
    }

    /// Client priority → Electron urgency (the desktop has no "high"; it and "urgent" become "critical").
    static func urgency(forPriority priority: String) -> String {
        switch priority {
        case "low": "low"
        case "high", "urgent": "critical"
        default: "normal"
        }
    }

    /// Electron urgency → client priority (`critical → urgent`, notes §1's tolerant mapping).
    static func priority(forUrgency urgency: String) -> String {
        switch urgency {
        case "low": "low"
        case "critical": "urgent"
        default: "normal"
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }

    static func nowMS(_ date: Date = Date()) -> Int {
        Int((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
