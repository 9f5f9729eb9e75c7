/// The notification skill's methods, by their wire names (the mobile client contract:
/// Android `NotificationCommands.kt`, iOS `NotificationCommands.swift`).
enum NotificationMethod: String, Sendable, CaseIterable {
    case send = "notification.send"
    case sendToMobile = "notification.sendToMobile"
    case broadcast = "notification.broadcast"
    case getHistory = "notification.getHistory"
    case markAsRead = "notification.markAsRead"
    case markAllAsRead = "notification.markAllAsRead"
    case delete = "notification.delete"
    case clearAll = "notification.clearAll"
    case getUnreadCount = "notification.getUnreadCount"
    case getSettings = "notification.getSettings"
    case updateSettings = "notification.updateSettings"

    /// The calls that wait in the offline queue while the desktop is unreachable, as the iOS
    /// client queues them: idempotent housekeeping whose outcome nobody waits to see.
    var isQueueable: Bool {
        switch self {
        case .markAsRead, .markAllAsRead, .delete, .clearAll: return true
        default: return false
        }
    }
}
