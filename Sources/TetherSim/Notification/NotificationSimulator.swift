import Foundation
import Logging

/// A faithful ChainlessChain notification backend, written from the protocol notes
/// (`protocols/notification.md`): a signaling relay on a WebSocket (§4.1) with a desktop peer on
/// it that answers the 11 `notification.*` methods (+ `clearHistory`) in the client-contract or
/// the real desktop shape (§1, §2.2), and pushes `notification.received` in both envelope
/// families (§3).
///
/// ```swift
/// let sim = NotificationSimulator(options: .init(shape: .desktop))
/// let url = try await sim.start()        // ws://127.0.0.1:PORT
/// // register as a mobile peer, get-peers → "desktop-1", send `message`s to it …
/// try sim.push(title: "Build done", body: "main is green")
/// await sim.stop()
/// ```
public final class NotificationSimulator: Sendable {
    public let options: Options
    let relay: SignalingRelay
    let desktop: SimulatedDesktop
    let server: SignalingWebSocketServer
    let logger: Logger

    public init(options: Options = Options(), logger: Logger? = nil) {
        let logger = logger ?? .simulatorNoOp
        self.options = options
        self.logger = logger
        let relay = SignalingRelay(
            limits: SignalingRelay.Limits(
                queueLimit: options.offlineQueueLimit,
                queueTTLms: NotificationStore.milliseconds(options.offlineMessageTTL)
            ),
            logger: logger
        )
        self.relay = relay
        self.desktop = SimulatedDesktop(options: options, relay: relay, logger: logger)
        self.server = SignalingWebSocketServer(relay: relay, logger: logger)
    }

    /// Starts the relay and (if `options.desktopOnline`) registers the desktop on it; returns the
    /// relay's `ws://HOST:PORT` (the real port when `port` is 0).
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) async throws -> URL {
        if let url = server.url { return url }
        let url = try await server.start(host: host, port: port)
        if options.desktopOnline { desktop.goOnline() }
        return url
    }

    /// Ends pending responses, closes every socket and the listener.
    public func stop() async {
        desktop.stop()
        await server.stop()
    }

    /// The relay's URL while running.
    public var url: URL? {
        server.url
    }

    public var desktopPeerID: String {
        options.desktopPeerID
    }

    // MARK: - Control

    /// Takes the desktop off the relay (peers get `peer-status` offline; `message`s to it are
    /// queued and answered `peer-offline`) or back on (it re-registers, and the relay replays the
    /// queued requests as `offline-message`s, which it then answers — late).
    public func setDesktopOnline(_ online: Bool) {
        if online {
            guard server.url != nil else { return }
            desktop.goOnline()
        } else {
            desktop.goOffline()
        }
    }

    public var isDesktopOnline: Bool {
        desktop.isOnline
    }

    /// Makes the desktop push `notification.received` (§3.1) and records the notification in its
    /// history (source `pc`, sent to mobile). Returns the `notificationId`.
    ///
    /// - Parameters:
    ///   - peerID: the target; nil ⇒ every registered peer that is not a desktop. An offline
    ///     target's frames are queued by the relay and replayed when it registers again.
    ///   - families: one frame per family, in this order.
    ///   - encoding: `payload` as object or JSON string (default: as in the notes' examples).
    ///   - twice: send everything a second time (the same `notificationId`), for dedup tests.
    @discardableResult
    public func push(
        title: String,
        body: String,
        priority: String = "normal",
        source: String = "pc",
        data: [String: String]? = nil,
        notificationID: String? = nil,
        to peerID: String? = nil,
        families: [PushFamily] = [.flat, .jsonRPC],
        encoding: PushEncoding = .asInNotes,
        twice: Bool = false
    ) throws -> String {
        guard server.url != nil else { throw NotificationSimulatorError.notRunning }
        guard desktop.isOnline else { throw NotificationSimulatorError.desktopOffline }
        let now = NotificationStore.nowMS()
        let row = desktop.withStore { store in
            store.insert(
                id: notificationID, type: "app", title: title, body: body,
                urgency: NotificationStore.urgency(forPriority: priority), priority: priority,
                data: data.map(WireJSON.sortedStringMap), source: source, sentToMobile: true, now: now
            )
        }
        let fields = NotificationEnvelope.receivedFields(
            notificationID: row.id, title: title, body: body, priority: priority, source: source,
            timestamp: now, data: data
        )
        let targets = peerID.map { [$0] } ?? relay.onlinePeers()
            .filter { $0.deviceType != "desktop" && $0.peerID != options.desktopPeerID }
            .map(\.peerID)
        for _ in 0..<(twice ? 2 : 1) {
            for target in targets {
                desktop.sendEvents(fields: fields, to: target, families: families, encoding: encoding)
            }
        }
        return row.id
    }

    // MARK: - Inspection

    /// Every command request the desktop received, in arrival order (duplicates included).
    public func commands() -> [RecordedCommand] {
        desktop.commands
    }

    /// Waits until the desktop has received `count` requests for `method` (any method when nil);
    /// returns the last of them.
    @discardableResult
    public func waitForCommand(
        _ method: String? = nil, count: Int = 1, timeout: Duration = .seconds(5)
    ) async throws -> RecordedCommand {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let matching = desktop.commands.filter { method == nil || $0.method == method }
            if matching.count >= count, let last = matching.last { return last }
            guard ContinuousClock.now < deadline else {
                throw SimulatorError.timedOut("waiting for \(count) × \(method ?? "any command")")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The desktop's history rows (expired ones included), newest first.
    public func notifications() -> [StoredNotification] {
        desktop.withStore { store in
            store.rows.sorted {
                $0.createdAt != $1.createdAt ? $0.createdAt > $1.createdAt : $0.sequence > $1.sequence
            }.map(StoredNotification.init)
        }
    }

    public func notification(id: String) -> StoredNotification? {
        desktop.withStore { store in store.rows.first { $0.id == id }.map(StoredNotification.init) }
    }

    /// What `getUnreadCount` would answer now.
    public func unreadCount() -> Int {
        desktop.withStore { $0.unreadCount(now: NotificationStore.nowMS()) }
    }

    public func settings() -> Settings {
        desktop.withStore { Settings($0.settings) }
    }

    /// Peers registered on the relay (the desktop included while online), oldest first.
    public func peers() -> [RelayPeer] {
        relay.onlinePeers().map(RelayPeer.init)
    }

    /// Frames the relay holds for `peerID` until it registers again.
    public func queuedMessageCount(for peerID: String) -> Int {
        relay.queuedCount(for: peerID)
    }
}
