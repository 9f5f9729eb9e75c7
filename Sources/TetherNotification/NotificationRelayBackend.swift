import Foundation
import Logging
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// The `notification` backend: the ChainlessChain notification skill, reached the way the
/// mobile apps reach it when their DataChannel is down — JSON envelopes relayed by the
/// signaling WebSocket (`register`, then `message` frames to the desktop's peer id). Tether
/// registers as a `mobile` peer and speaks the client contract; it reads both the contract's
/// result shapes and the real desktop's. See adapters.md (Notification) and
/// protocols/notification.md — notably §0: today's desktop answers every `notification.*` on
/// this path with "Unknown command namespace: notification", which Tether reports as such.
public struct NotificationRelayBackend: NotificationBackend {
    public struct Configuration: Sendable {
        /// The relay, `ws://HOST:9001` or `wss://…`.
        public var url: String
        /// Our stable peer id (nil: one derived from user, host and profile, kept in the state directory).
        public var peerID: String?
        /// The desktop's peer id (nil: the one `deviceType: desktop` peer `get-peers` lists).
        public var desktop: String?
        public var profile: String
        /// Tether's state directory; the offline queue and the peer id live under `notification/<profile>/`.
        public var stateDirectory: String
        /// How long to wait for the relay and for each answer (the mobile clients' 30 s).
        public var timeout: Duration
        /// `watch`: no frame (pongs included) for this long and the link is presumed dead; pings
        /// go out at 40 % of it (30 s of the default 75 s).
        public var liveness: Duration
        /// `watch`: when and how often a lost link is reconnected.
        public var reconnect: ReconnectPolicy.Configuration

        public init(url: String, peerID: String?, desktop: String?, profile: String, stateDirectory: String,
                    timeout: Duration = .seconds(30), liveness: Duration = .seconds(75),
                    reconnect: ReconnectPolicy.Configuration = .init()) {
            self.url = url
            self.peerID = peerID
            self.desktop = desktop
            self.profile = profile
            self.stateDirectory = stateDirectory
            self.timeout = timeout
            self.liveness = liveness
            self.reconnect = reconnect
        }
    }

    public let kind = BackendKind.notification
    public let capabilities: BackendCapabilities = [.notifications, .events]

    let configuration: Configuration
    let logger: Logger
    let connector: SignalingConnector
    let store: NotificationQueueStore

    public init(configuration: Configuration, logger: Logger) {
        self.init(configuration: configuration, logger: logger,
                  connector: WebSocketSignalingChannel.connector(url: configuration.url, liveness: configuration.liveness,
                                                                 logger: logger))
    }

    /// With another way to reach the relay (tests use an in-memory one).
    init(configuration: Configuration, logger: Logger, connector: @escaping SignalingConnector) {
        self.configuration = configuration
        self.logger = logger
        self.connector = connector
        store = NotificationQueueStore(stateDirectory: configuration.stateDirectory, profile: configuration.profile)
    }

    /// What waits in the offline queue (oldest first), for `tether notifications queue`: `id`,
    /// `method`, `params`, `queued_at` (epoch ms), `attempts`, `status` (`pending`, or `failed`
    /// once out of attempts), `last_error`. Empty when the queue cannot be read (logged).
    public func pendingQueue() -> [JSONObject] {
        do {
            return try store.load().entries.map(\.json)
        } catch {
            logger.warning("cannot read the notification offline queue", metadata: ["error": "\(error)"])
            return []
        }
    }

    // MARK: - Check

    public func check() async throws -> CheckReport {
        try await surface {
            let stable = try stablePeerID()
            let session = try await openSession(peerID: NotificationPeerIdentity.ephemeral(from: stable), longLived: false)
            let report = await checkReport(session, stablePeerID: stable)
            await session.close()
            return report
        }
    }

    /// Peers, the desktop, and a `getUnreadCount` probe: usable means the desktop answered it.
    private func checkReport(_ session: NotificationRelaySession, stablePeerID: String) async -> CheckReport {
        var details: JSONObject = ["peer_id": .string(stablePeerID)]
        details["queued"] = .int(Int64((try? store.load().pendingCount) ?? 0))
        let probeTimeout = Swift.min(configuration.timeout, .seconds(10))
        if let peers = try? await session.peers(timeout: probeTimeout) {
            details["peers"] = .array(peers.filter { $0.peerID != session.peerID }.map(\.json))
        }
        let desktop: String
        do {
            desktop = try await resolveDesktop(session)
        } catch {
            details["desktop_online"] = false
            details["problem"] = .string((error as? DesktopUnreachable)?.error.message ?? (error as? TetherError)?.message ?? "\(error)")
            return CheckReport(endpoint: configuration.url, reachable: false, authenticated: false, details: details)
        }
        details["desktop"] = .string(desktop)
        details["desktop_online"] = true
        var usable = false
        do {
            let result = try await call(.getUnreadCount, [:], session: session, desktop: desktop, timeout: probeTimeout)
            details["unread"] = .int(Int64(try NotificationResponseDecoder.unreadCount(
                result, .init(method: .getUnreadCount, desktop: desktop))))
            details["notification_rpc"] = "ok"
            usable = true
        } catch let error as TetherError {
            details["notification_rpc"] = .string(error.code == .unsupported ? "unsupported" : error.code == .timeout ? "no answer" : "error")
            details["problem"] = .string(error.message)
        } catch {
            details["notification_rpc"] = "no answer"
            details["problem"] = .string((error as? DesktopUnreachable)?.error.message ?? "\(error)")
        }
        return CheckReport(endpoint: configuration.url, reachable: usable, authenticated: false, details: details)
    }

    // MARK: - Not this backend's

    private func unsupported(_ what: String) -> TetherError {
        .unsupported(what, backend: kind, hint: "this profile's backend serves notifications only: `tether notifications …`")
    }

    public func listSessions(_ request: SessionListRequest) async throws -> [Session] { throw unsupported("`sessions`") }
    public func createSession(_ request: SessionCreateRequest) async throws -> Session { throw unsupported("`sessions create`") }
    public func session(id: String) async throws -> Session { throw unsupported("`sessions show`") }
    public func history(session: String, limit: Int?) async throws -> [Event] { throw unsupported("`history`") }
    public func send(_ request: SendRequest) async throws -> SendReceipt { throw unsupported("`send`") }
    public func pendingApprovals(session: String?) async throws -> [Approval] { throw unsupported("`approvals`") }
    public func approve(id: String, answer: ApprovalAnswer) async throws -> Event { throw unsupported("`approve`") }
    public func abort(session: String, turn: String?) async throws { throw unsupported("`abort`") }

    /// `events --follow` is `notifications watch`; without `--follow`, the current
    /// notifications (newest first) as `notification.received` lines.
    public func events(_ request: EventsRequest) -> EventStream {
        if request.follow { return watch() }
        return EventChannel.stream { output in
            let notifications = try await listNotifications(unreadOnly: false, limit: nil, offset: nil)
            try await output.send(contentsOf: notifications.map { .notificationReceived($0) })
        }
    }

    // MARK: - Sessions with the desktop

    func stablePeerID() throws(TetherError) -> String {
        try NotificationPeerIdentity.stable(configured: configuration.peerID, store: store, profile: configuration.profile)
    }

    func openSession(peerID: String, longLived: Bool) async throws -> NotificationRelaySession {
        try await NotificationRelaySession.open(connector: connector, longLived: longLived, peerID: peerID,
                                                relay: configuration.url, timeout: configuration.timeout, logger: logger)
    }

    /// A one-shot registration (ephemeral peer id): finds the desktop, sends what waits in the
    /// offline queue, runs `body`, unregisters. Throws `DesktopUnreachable` when the relay or
    /// the desktop cannot be reached.
    func withDesktop<T>(_ body: (NotificationRelaySession, String) async throws -> T) async throws -> T {
        let stable = try stablePeerID()
        let session = try await openSession(peerID: NotificationPeerIdentity.ephemeral(from: stable), longLived: false)
        do {
            let desktop = try await resolveDesktop(session)
            await drainQueue(session, desktop: desktop)
            let result = try await body(session, desktop)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }

    /// The desktop's peer id: the profile's `desktop` if the relay lists it, else the one peer
    /// of `deviceType: desktop`. A relay that does not answer `get-peers` is trusted to say
    /// `peer-offline` instead, when the profile names the desktop.
    func resolveDesktop(_ session: NotificationRelaySession) async throws -> String {
        let profile = configuration.profile
        let peers: [NotificationWire.Peer]
        do {
            peers = try await session.peers(timeout: Swift.min(configuration.timeout, .seconds(10)))
        } catch let error as TetherError where error.code == .timeout {
            if let desktop = configuration.desktop { return desktop }
            throw DesktopUnreachable(error: TetherError(
                .unavailable, "the relay at \(configuration.url) did not list its peers, so the desktop cannot be found",
                hint: "name it in the profile: desktop = \"<the desktop's peer id>\" under [profiles.\(profile)]", retryable: true))
        }
        let online = peers.map(\.peerID).filter { $0 != session.peerID }
        if let desktop = configuration.desktop {
            guard peers.contains(where: { $0.peerID == desktop }) else {
                throw DesktopUnreachable(error: TetherError(
                    .unavailable, "the desktop (peer \(desktop)) is not connected to the relay at \(configuration.url)",
                    hint: "start the ChainlessChain desktop, or check profiles.\(profile).desktop; the relay lists: "
                        + (online.isEmpty ? "no other peer" : online.joined(separator: ", ")),
                    retryable: true))
            }
            return desktop
        }
        let desktops = peers.filter { $0.deviceType?.lowercased() == "desktop" && $0.peerID != session.peerID }
        switch desktops.count {
        case 0:
            throw DesktopUnreachable(error: TetherError(
                .unavailable, "no desktop is connected to the relay at \(configuration.url)",
                hint: "start the ChainlessChain desktop (it registers as deviceType \"desktop\"), or name its peer id with desktop = \"…\" under [profiles.\(profile)]",
                retryable: true))
        case 1:
            return desktops[0].peerID
        default:
            throw TetherError(.configuration, "several desktops are connected to the relay at \(configuration.url): "
                                  + desktops.map(\.peerID).joined(separator: ", "),
                              hint: "choose one with desktop = \"<peer id>\" under [profiles.\(profile)]")
        }
    }

    /// One request and its result, or its error as a `TetherError`.
    func call(_ method: NotificationMethod, _ params: JSONObject, session: NotificationRelaySession, desktop: String,
              timeout: Duration? = nil) async throws -> JSONValue {
        let response = try await session.call(method, params: params, to: desktop, timeout: timeout ?? configuration.timeout)
        return try NotificationResponseDecoder.result(of: response, .init(method: method, desktop: desktop))
    }

    /// Runs `body`, letting only `TetherError`s out: the CLI reports those.
    func surface<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let unreachable as DesktopUnreachable {
            throw unreachable.error
        } catch let error as NetError {
            throw error.tetherError(service: "the signaling relay")
        }
    }
}
