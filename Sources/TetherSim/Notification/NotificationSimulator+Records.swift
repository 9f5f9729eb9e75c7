import Foundation

extension NotificationSimulator {
    /// One command request the desktop received, as it arrived (duplicates and replays included).
    public struct RecordedCommand: Sendable {
        /// The request `id` (a JSON string as is; any other JSON value serialized).
        public let requestID: String
        public let method: String
        /// The signaling `from` of the frame: where the response goes.
        public let from: String
        /// `chainlesschain:command:request` (or the legacy `command:request`).
        public let envelopeType: String
        /// The envelope's `payload` was a JSON string rather than an object.
        public let payloadWasString: Bool
        /// The same request id was seen within the dedup window: dropped silently, never answered.
        public let duplicate: Bool
        /// Arrived as a relay `offline-message` replay when the desktop re-registered.
        public let replayed: Bool
        public let receivedAt: Date
        let params: WireJSON

        /// `params`, serialized with the keys in the order the client sent them.
        public var paramsJSON: String { params.serialized }

        /// The top-level keys of `params`, in the order sent.
        public var paramKeys: [String] { params.wireMembers.map(\.key) }

        /// A string parameter.
        public func stringParam(_ key: String) -> String? { params[key]?.stringValue }

        /// A boolean parameter.
        public func boolParam(_ key: String) -> Bool? { params[key]?.wireBool }

        /// An integer parameter.
        public func intParam(_ key: String) -> Int? { params[key]?.wireInt }

        /// A parameter serialized as JSON text (nil when absent).
        public func paramJSON(_ key: String) -> String? { params[key]?.serialized }
    }

    /// A row of the desktop's notification history.
    public struct StoredNotification: Sendable, Equatable {
        public let id: String
        public let type: String
        public let title: String
        public let body: String
        /// Client priority (`low|normal|high|urgent`) and Electron urgency (`low|normal|critical`).
        public let priority: String
        public let urgency: String
        /// `local` (desktop `send`), `pc` (`sendToMobile`, `broadcast`, pushes) or `mobile`.
        public let source: String
        public let read: Bool
        public let readAt: Date?
        public let sentToMobile: Bool
        public let createdAt: Date
        public let expiresAt: Date
        /// `data` serialized as JSON text (nil when the row has none).
        public let dataJSON: String?

        /// Whether the desktop still lists it (expired rows are kept but never listed or counted).
        public var isExpired: Bool { expiresAt <= Date() }

        init(_ row: NotificationRow) {
            func date(_ ms: Int) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
            id = row.id
            type = row.type
            title = row.title
            body = row.body
            priority = row.priority
            urgency = row.urgency
            source = row.source
            read = row.read
            readAt = row.readAt.map(date)
            sentToMobile = row.sentToMobile
            createdAt = date(row.createdAt)
            expiresAt = date(row.expiresAt)
            dataJSON = row.data?.serialized
        }
    }

    /// The desktop's settings (both shapes read and write these).
    public struct Settings: Sendable, Equatable {
        public let enabled: Bool
        public let soundEnabled: Bool
        public let vibrationEnabled: Bool
        public let showPreview: Bool
        public let quietHoursEnabled: Bool
        public let quietHoursStart: String
        public let quietHoursEnd: String
        /// Desktop type filters (`system, app, message, reminder, alert`); false ⇒ `send` answers `type_disabled`.
        public let filters: [String: Bool]

        init(_ settings: DesktopSettings) {
            enabled = settings.enabled
            soundEnabled = settings.soundEnabled
            vibrationEnabled = settings.vibrationEnabled
            showPreview = settings.showPreview
            quietHoursEnabled = settings.quietHoursEnabled
            quietHoursStart = settings.quietHoursStart
            quietHoursEnd = settings.quietHoursEnd
            var filters: [String: Bool] = [:]
            for member in settings.filters.wireMembers {
                if let value = member.value.wireBool { filters[member.key] = value }
            }
            self.filters = filters
        }
    }

    /// A peer registered on the relay.
    public struct RelayPeer: Sendable, Equatable {
        public let peerID: String
        public let deviceType: String?
        public let connectedAt: Date

        init(_ peer: SignalingRelay.Peer) {
            peerID = peer.peerID
            deviceType = peer.deviceType
            connectedAt = Date(timeIntervalSince1970: Double(peer.connectedAt) / 1000)
        }
    }
}

/// Misuse of the simulator's control API.
public struct NotificationSimulatorError: Error, Sendable, CustomStringConvertible {
    public let description: String

    static let desktopOffline = NotificationSimulatorError(
        description: "the simulated desktop is offline: call setDesktopOnline(true) before pushing")
    static let notRunning = NotificationSimulatorError(
        description: "the notification simulator is not running: call start() first")
}
