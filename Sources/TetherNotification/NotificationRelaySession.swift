import Foundation
import Logging
import TetherCore
import TetherNet
import TetherStreaming

/// The desktop cannot be reached now: the relay is down or unreachable, no desktop is online,
/// or the relay answered `peer-offline`. Queueable calls wait in the offline queue instead.
struct DesktopUnreachable: Error {
    var error: TetherError
    /// The relay queued our request itself (it answered `peer-offline`), and will deliver it
    /// when the desktop registers again.
    var relayQueued = false
}

/// One registration on the relay: the thin I/O around `NotificationWire`. It registers, asks
/// for peers, relays command requests and matches responses by id — dropping duplicates, late
/// answers and answers to requests this process never sent (the relay replays queued frames
/// to whoever registers an id next) — and hands pushed events to `events`.
actor NotificationRelaySession {
    nonisolated let peerID: String
    nonisolated let relay: String
    /// Events pushed by peers, with the frame they came in (for `--raw`).
    /// Pushed events, in order. Bounded without loss: when the consumer falls `pushedEventsAhead`
    /// behind, the reader waits (and the WebSocket, then TCP, push back on the relay).
    nonisolated let events = BatchChannel<(NotificationWire.PushedEvent, JSONValue?)>(capacity: NotificationRelaySession.pushedEventsAhead)
    static let pushedEventsAhead = 256

    private let channel: any SignalingChannel
    private let logger: Logger

    private struct Pending {
        var continuation: CheckedContinuation<NotificationWire.Response, any Error>
        var method: NotificationMethod
        var desktop: String
        var timer: Task<Void, Never>?
    }

    private var pending: [String: Pending] = [:]
    private var answered = RecentSet(capacity: 256)
    private var registration: (continuation: CheckedContinuation<Void, any Error>, timer: Task<Void, Never>)?
    private var peersWaiter: (continuation: CheckedContinuation<[NotificationWire.Peer], any Error>, timer: Task<Void, Never>)?
    private var closedWaiters: [CheckedContinuation<TetherError?, Never>] = []
    /// Set once the connection has ended; nil inside means an orderly close.
    private var ended: TetherError??
    private var reader: Task<Void, Never>?

    private init(channel: any SignalingChannel, peerID: String, relay: String, logger: Logger) {
        self.channel = channel
        self.peerID = peerID
        self.relay = relay
        self.logger = logger
    }

    /// Connects and registers as `peerID` (deviceType `mobile`). Throws `DesktopUnreachable`
    /// when the relay cannot be reached, `TetherError` when it refuses us.
    static func open(connector: SignalingConnector, longLived: Bool, peerID: String, relay: String, timeout: Duration,
                     logger: Logger) async throws -> NotificationRelaySession {
        let channel: any SignalingChannel
        do {
            channel = try await connector(longLived)
        } catch let error as NetError {
            throw relayFailure(error, relay: relay)
        }
        let session = NotificationRelaySession(channel: channel, peerID: peerID, relay: relay, logger: logger)
        await session.startReading()
        do {
            try await session.register(timeout: timeout)
        } catch {
            await session.close()
            throw error
        }
        return session
    }

    static func relayFailure(_ error: NetError, relay: String) -> any Error {
        switch error.kind {
        case .status(let status) where [502, 503, 504].contains(status):
            // A proxy in front of a relay that is (re)starting: gone for a moment, like a refused connection.
            return DesktopUnreachable(error: TetherError(
                .unavailable, "the signaling relay at \(relay) is not answering: HTTP \(status) to the upgrade",
                hint: "the relay (or the proxy in front of it) may be restarting; Tether retries", retryable: true))
        case .status(let status):
            return TetherError(.configuration, "\(relay) is not a signaling WebSocket: it answered HTTP \(status) to the upgrade",
                               hint: "the profile's url must be the relay's ws:// or wss:// address (the desktop's signaling server listens on port 9001)")
        case .tls:
            return TetherError(.unavailable, "TLS with the signaling relay at \(relay) failed: \(error.detail)",
                               hint: "check the relay's certificate; Tether always verifies TLS")
        case .cancelled:
            return TetherError(.interrupted, "cancelled while connecting to \(relay)")
        case .other where !error.isRetryableForRelay:
            return TetherError(.configuration, "cannot use the relay URL \(relay): \(error.detail)",
                               hint: "the profile's url must look like ws://HOST:9001 or wss://HOST/PATH")
        default:
            return DesktopUnreachable(error: TetherError(
                .unavailable, "cannot reach the signaling relay at \(relay): \(error.detail)",
                hint: "is the relay (or the desktop that embeds it, port 9001) running, and the profile's url right?",
                retryable: true))
        }
    }

    private func startReading() {
        reader = Task { [channel] in
            var end: TetherError?
            do {
                while let text = try await channel.receive() {
                    // Waits while the consumer is behind: a push is never dropped here.
                    if let pushed = self.handle(NotificationWire.decode(text)) { try await self.events.send(pushed) }
                }
            } catch is CancellationError {
                end = nil
            } catch let error as NetError {
                end = TetherError(.unavailable, "the connection to the relay at \(relay) broke: \(error.detail)", retryable: true)
            } catch {
                end = TetherError(.unavailable, "the connection to the relay at \(relay) broke: \(error)", retryable: true)
            }
            self.finish(end)
        }
    }

    // MARK: - Requests

    private func register(timeout: Duration) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let timer = after(timeout) { session in
                session.failRegistration(DesktopUnreachable(error: TetherError(
                    .timeout, "the signaling relay at \(session.relay) did not confirm our registration within \(timeout)",
                    hint: "is the url the relay's WebSocket address?", retryable: true)))
            }
            registration = (continuation, timer)
            let frame = NotificationWire.register(peerID: peerID, deviceInfo: [
                "name": .string("tether on \(NotificationPeerIdentity.hostName())"), "platform": "linux",
                "app": "tether", "version": .string(TetherVersion.string),
            ])
            send(frame) { session, error in session.failRegistration(error) }
        }
    }

    private func failRegistration(_ error: any Error) {
        registration?.timer.cancel()
        registration?.continuation.resume(throwing: error)
        registration = nil
    }

    /// Runs `action` on the actor after `delay`, unless cancelled first.
    private func after(_ delay: Duration, _ action: @escaping @Sendable (isolated NotificationRelaySession) -> Void) -> Task<Void, Never> {
        Task {
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            action(self)
        }
    }

    /// The peers the relay knows (`get-peers`).
    func peers(timeout: Duration) async throws -> [NotificationWire.Peer] {
        if let ended { throw unreachable(ended) }
        return try await withCheckedThrowingContinuation { continuation in
            failPeers(CancellationError())
            let timer = after(timeout) { session in
                session.failPeers(TetherError(.timeout, "the relay at \(session.relay) did not answer get-peers within \(timeout)",
                                              retryable: true))
            }
            peersWaiter = (continuation, timer)
            send(NotificationWire.getPeers) { session, error in session.failPeers(error) }
        }
    }

    private func failPeers(_ error: any Error) {
        peersWaiter?.timer.cancel()
        peersWaiter?.continuation.resume(throwing: error)
        peersWaiter = nil
    }

    /// Relays one request to `desktop` and waits for its response (fresh id every time: the
    /// desktop ignores a repeated one for 30 s). Throws `TetherError(.timeout)` after `timeout`,
    /// `DesktopUnreachable` when the relay says the desktop is offline or the link drops.
    func call(_ method: NotificationMethod, params: JSONObject, to desktop: String,
              timeout: Duration) async throws -> NotificationWire.Response {
        if let ended { throw unreachable(ended) }
        let id = UUID().uuidString
        let frame = NotificationWire.request(id: id, method: method, params: params, from: peerID, to: desktop,
                                             timestamp: Int64(Date().timeIntervalSince1970 * 1000))
        logger.debug("notification request", metadata: ["method": "\(method.rawValue)", "id": "\(id)", "desktop": "\(desktop)"])
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let timer = after(timeout) { session in
                    session.fail(id, TetherError(
                        .timeout, "the desktop (peer \(desktop)) did not answer \(method.rawValue) within \(timeout)",
                        hint: "is the ChainlessChain desktop running and connected to the relay? `tether check` lists the peers the relay knows",
                        retryable: true))
                }
                pending[id] = Pending(continuation: continuation, method: method, desktop: desktop, timer: timer)
                if Task.isCancelled {
                    fail(id, CancellationError())
                    return
                }
                send(frame) { session, error in session.fail(id, error) }
            }
        } onCancel: {
            Task { await self.fail(id, CancellationError()) }
        }
    }

    private func fail(_ id: String, _ error: any Error) {
        guard let request = pending.removeValue(forKey: id) else { return }
        request.timer?.cancel()
        request.continuation.resume(throwing: error)
    }

    /// Sends a frame in the background; `onError` runs on the actor if it fails.
    private func send(_ frame: String, onError: @escaping @Sendable (isolated NotificationRelaySession, any Error) -> Void) {
        Task { [channel] in
            do {
                try await channel.send(frame)
            } catch {
                self.failed(error, onError)
            }
        }
    }

    private func failed(_ error: any Error, _ handler: @Sendable (isolated NotificationRelaySession, any Error) -> Void) {
        let wrapped: any Error = (error as? NetError).map {
            DesktopUnreachable(error: TetherError(.unavailable, "sending to the relay at \(relay) failed: \($0.detail)", retryable: true))
        } ?? error
        handler(self, wrapped)
    }

    // MARK: - Inbound

    /// Applies a frame; returns the pushed event it carries, for `events`.
    private func handle(_ frame: NotificationWire.Frame) -> (NotificationWire.PushedEvent, JSONValue?)? {
        switch frame.inbound {
        case .registered(let id):
            logger.debug("registered on the relay", metadata: ["peer": "\(id ?? peerID)", "relay": "\(relay)"])
            registration?.timer.cancel()
            registration?.continuation.resume()
            registration = nil
        case .peers(let peers):
            peersWaiter?.timer.cancel()
            peersWaiter?.continuation.resume(returning: peers)
            peersWaiter = nil
        case .peerOffline(let peer):
            // The relay queued our message for the offline peer; it names the peer, not the request.
            for (id, request) in pending where peer == nil || request.desktop == peer {
                fail(id, DesktopUnreachable(error: TetherError(
                    .unavailable, "the desktop (peer \(request.desktop)) is offline; the relay keeps the request and delivers it when the desktop returns",
                    retryable: true), relayQueued: true))
            }
        case .relayError(let message):
            let error = TetherError(.failed, "the signaling relay at \(relay) refused a request: \(message)")
            if registration != nil {
                failRegistration(error)
            } else if !pending.isEmpty {
                for id in Array(pending.keys) { fail(id, error) }
            } else if peersWaiter != nil {
                failPeers(error)
            } else {
                logger.warning("the signaling relay reported an error", metadata: ["error": "\(message)"])
            }
        case .response(let response, let from):
            if let request = pending.removeValue(forKey: response.id) {
                answered.insert(response.id)
                request.timer?.cancel()
                request.continuation.resume(returning: response)
            } else if answered.contains(response.id) {
                logger.debug("dropping a duplicate response", metadata: ["id": "\(response.id)", "from": "\(from ?? "?")"])
            } else {
                logger.debug("dropping a response to a request this process did not send (late, or replayed by the relay)",
                             metadata: ["id": "\(response.id)", "replayed": "\(frame.replayed)"])
            }
        case .event(let event, _):
            return (event, frame.raw)
        case .ignored(let type):
            logger.trace("ignoring a relay frame", metadata: ["type": "\(type)"])
        case .malformed(let reason):
            logger.warning("skipping a relay frame that cannot be read", metadata: ["reason": "\(reason)"])
        }
        return nil
    }

    private func finish(_ end: TetherError?) {
        guard ended == nil else { return }
        ended = .some(end)
        let failure = unreachable(.some(end))
        failRegistration(failure)
        failPeers(failure)
        for id in Array(pending.keys) { fail(id, failure) }
        events.finish()
        for waiter in closedWaiters { waiter.resume(returning: end) }
        closedWaiters = []
    }

    private func unreachable(_ end: TetherError??) -> DesktopUnreachable {
        DesktopUnreachable(error: (end ?? nil) ?? TetherError(
            .unavailable, "the signaling relay at \(relay) closed the connection", retryable: true))
    }

    /// Waits until the connection ends; returns why (nil: the relay closed it in an orderly way).
    func waitUntilClosed() async -> TetherError? {
        if let ended { return ended }
        return await withCheckedContinuation { closedWaiters.append($0) }
    }

    func close() async {
        reader?.cancel()
        await channel.close()
        finish(nil)
    }
}

extension NetError {
    /// A relay URL that cannot even be parsed is a configuration error, not an outage.
    fileprivate var isRetryableForRelay: Bool {
        !(detail.contains("scheme") || detail.contains("not a URL") || detail.contains("no host") || detail.contains("#fragment"))
    }
}
