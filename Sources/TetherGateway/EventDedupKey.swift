import TetherCore

/// The append-time duplicate rule. A re-subscription (an adapter's resync after a reconnect or a
/// gateway restart) re-reads what the backend still has and emits again the events that say
/// something happened once; those are keyed so the log keeps the first and ignores the rest.
/// Every other type (deltas, statuses, usage, connection states) is appended each time it comes.
enum EventDedupKey {
    /// The key of an event the rule covers, or nil for an event that is always appended.
    static func key(for event: Event) -> String? {
        let profile = event.profile ?? ""
        let type = event.type.rawValue
        switch event.type {
        case .partCompleted:
            return join(profile: profile, type: type, [event.session, event.turn, event.part])
        case .turnCompleted:
            return join(profile: profile, type: type, [event.session, event.turn])
        case .approvalRequested, .approvalResolved:
            guard let id = event.data["id"]?.stringish else { return nil }
            return join(profile: profile, type: type, [id])
        case .sessionCreated, .sessionDeleted:
            guard let session = event.session ?? event.data["id"]?.stringish else { return nil }
            return join(profile: profile, type: type, [session])
        case .notificationReceived:
            guard let id = event.data["id"]?.stringish else { return nil }
            return join(profile: profile, type: type, [id])
        default:
            return nil
        }
    }

    /// A unit separator keeps ("a|b", "c") and ("a", "b|c") apart.
    static func join(profile: String, type: String, _ parts: [String?]) -> String {
        ([profile, type] + parts.map { $0 ?? "" }).joined(separator: "\u{1F}")
    }
}
