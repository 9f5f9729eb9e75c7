import Foundation

extension NotificationSimulator {
    /// Which result shapes the simulated desktop answers with (notes §1's table, §2.2).
    public enum Shape: String, Sendable, CaseIterable {
        /// The client contract (Android `NotificationCommands.kt` / iOS models): `notificationId`,
        /// `notifications`, flat settings; the response `payload` is an object and an `error` a string.
        case contract
        /// What `notification-handler.js` really returns: `id`, `items`, nested settings, the
        /// mark-all branch of `markAsRead`; the response `payload` is a JSON string and `error`
        /// `null` or `{code, message}` (`index.js handleMobileCommand`).
        case desktop
    }

    /// The two push envelope families of §3.1.
    public enum PushFamily: String, Sendable, CaseIterable {
        /// `{type:"chainlesschain:event", payload:{event:"notification.received", …fields}}` (iOS).
        case flat
        /// `{type:"chainlesschain:event:notification", payload:{jsonrpc:"2.0", method, params}}` (Android).
        case jsonRPC
    }

    /// How an event's `payload` is put on the wire.
    public enum PushEncoding: String, Sendable, CaseIterable {
        /// As in the notes' examples (§3.1): an object for the flat family, a JSON string for JSON-RPC.
        case asInNotes
        case object
        case string
    }

    /// Quiet hours as the desktop stores them (`quietHours {start, end}`, "HH:mm", local time).
    public struct QuietHours: Sendable, Equatable {
        public var start: String
        public var end: String

        public init(start: String, end: String) {
            self.start = start
            self.end = end
        }

        /// The desktop's default window.
        public static let overnight = QuietHours(start: "22:00", end: "08:00")
        /// Always quiet: with `start == end` the desktop's rule takes the overnight branch
        /// (`now >= start || now < end`), which holds at every minute.
        public static let allDay = QuietHours(start: "00:00", end: "00:00")
    }

    /// One notification in the desktop's history table at start.
    public struct Seed: Sendable, Equatable {
        public var id: String?
        public var title: String
        public var body: String
        /// Client priority (`low|normal|high|urgent`); the row's Electron `urgency` is derived from it.
        public var priority: String
        /// Desktop type (`system|app|message|reminder|alert`).
        public var type: String
        /// Row `source`: `local` (desktop `send`), `pc` (`sendToMobile`/`broadcast`), `mobile`.
        public var source: String
        public var read: Bool
        /// How long ago it was created; rows older than 7 days are expired and never listed.
        public var age: Duration
        public var data: [String: String]?

        public init(
            id: String? = nil,
            title: String,
            body: String,
            priority: String = "normal",
            type: String = "app",
            source: String = "pc",
            read: Bool = false,
            age: Duration = .seconds(60),
            data: [String: String]? = nil
        ) {
            self.id = id
            self.title = title
            self.body = body
            self.priority = priority
            self.type = type
            self.source = source
            self.read = read
            self.age = age
            self.data = data
        }

        /// Three rows, two unread, newest first when listed: "Build done", "Review requested", "Backup complete".
        public static let fixtures: [Seed] = [
            Seed(id: "notif-1795311000000-0a1b2c3d", title: "Backup complete", body: "Nightly backup finished",
                 priority: "low", type: "system", source: "local", read: true, age: .seconds(3 * 3600)),
            Seed(id: "notif-1795311060000-1b2c3d4e", title: "Review requested", body: "PR #42 needs your review",
                 priority: "normal", type: "message", source: "pc", age: .seconds(2 * 3600)),
            Seed(id: "notif-1795311120000-2c3d4e5f", title: "Build done", body: "main is green",
                 priority: "high", type: "app", source: "pc", age: .seconds(3600),
                 data: ["url": "https://example.invalid/ci/42"]),
        ]
    }

    /// How the simulated relay and desktop behave.
    public struct Options: Sendable {
        public var shape: Shape
        /// The desktop's `pcPeerId` on the relay.
        public var desktopPeerID: String
        /// The `deviceInfo` the desktop registers with.
        public var desktopDeviceInfo: [String: String]
        /// Answer every `notification.*` with JSON-RPC error -32603 "Unknown command namespace:
        /// notification", as a current real desktop does on the mobile-bridge path (§0). The error is
        /// still encoded per `shape`; use `.desktop` for the byte-exact real answer.
        public var unknownNamespace: Bool
        /// Send every response twice: the twin `duplicateDelay` after the first (DC + signaling twins, §2.2).
        public var duplicateResponses: Bool
        public var duplicateDelay: Duration
        /// Delay before each response (state changes apply when the request arrives).
        public var responseDelay: Duration
        /// Whether the desktop is registered on the relay at start; see `setDesktopOnline(_:)`.
        public var desktopOnline: Bool
        /// Quiet hours in the desktop's settings at start; nil ⇒ disabled (window 22:00–08:00).
        public var quietHours: QuietHours?
        /// The desktop's history at start.
        public var seed: [Seed]
        /// Families and encoding of the pushes a `.contract` desktop sends for `sendToMobile`/`broadcast`.
        public var pushFamilies: [PushFamily]
        public var pushEncoding: PushEncoding
        /// Relay offline queue per peer (standalone server: 100 messages, 24 h).
        public var offlineQueueLimit: Int
        public var offlineMessageTTL: Duration
        /// Desktop inbound request-id dedup (`mobile-bridge.js`: 128 ids, 30 s).
        public var requestDedupLimit: Int
        public var requestDedupTTL: Duration

        public init(
            shape: Shape = .desktop,
            desktopPeerID: String = "desktop-1",
            desktopDeviceInfo: [String: String] = ["name": "Tether Sim Desktop", "platform": "linux"],
            unknownNamespace: Bool = false,
            duplicateResponses: Bool = false,
            duplicateDelay: Duration = .milliseconds(50),
            responseDelay: Duration = .zero,
            desktopOnline: Bool = true,
            quietHours: QuietHours? = nil,
            seed: [Seed] = Seed.fixtures,
            pushFamilies: [PushFamily] = [.flat, .jsonRPC],
            pushEncoding: PushEncoding = .asInNotes,
            offlineQueueLimit: Int = 100,
            offlineMessageTTL: Duration = .seconds(24 * 3600),
            requestDedupLimit: Int = 128,
            requestDedupTTL: Duration = .seconds(30)
        ) {
            self.shape = shape
            self.desktopPeerID = desktopPeerID
            self.desktopDeviceInfo = desktopDeviceInfo
            self.unknownNamespace = unknownNamespace
            self.duplicateResponses = duplicateResponses
            self.duplicateDelay = duplicateDelay
            self.responseDelay = responseDelay
            self.desktopOnline = desktopOnline
            self.quietHours = quietHours
            self.seed = seed
            self.pushFamilies = pushFamilies
            self.pushEncoding = pushEncoding
            self.offlineQueueLimit = offlineQueueLimit
            self.offlineMessageTTL = offlineMessageTTL
            self.requestDedupLimit = requestDedupLimit
            self.requestDedupTTL = requestDedupTTL
        }
    }
}
