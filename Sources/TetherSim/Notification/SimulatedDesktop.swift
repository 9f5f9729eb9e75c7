import Foundation
import Logging

/// The desktop peer: registers on the relay as `deviceType:"desktop"` (as `MobileBridge` does over
/// `ws://localhost:<port>`), answers `chainlesschain:command:request`s relayed by `message` frames
/// to their `from`, and pushes `notification.received` events when told to.
///
/// Its link to the relay is in-process, but it speaks the same frames a socket would, so what a
/// mobile peer sees on the wire is exactly what a real desktop would send.
final class SimulatedDesktop: Sendable {
    private struct Link: Sendable {
        var id: Int
        var inbox: AsyncStream<WireJSON>.Continuation
    }

    private struct State {
        var store: NotificationStore
        var link: Link?
        var stopped = false
        /// `mobile-bridge.js recentMobileRequests`: request id → arrival (ms), oldest first.
        var recentRequests: [(id: String, at: Int)] = []
        var commands: [NotificationSimulator.RecordedCommand] = []
        /// Delayed responses and inbox readers, so `stop()` can end them.
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTaskID = 1
    }

    private let options: NotificationSimulator.Options
    private let relay: SignalingRelay
    private let logger: Logger
    private let state: Locked<State>

    init(options: NotificationSimulator.Options, relay: SignalingRelay, logger: Logger) {
        self.options = options
        self.relay = relay
        self.logger = logger
        let store = NotificationStore(seed: options.seed, quietHours: options.quietHours, now: NotificationStore.nowMS())
        self.state = Locked(State(store: store))
    }

    // MARK: - Presence

    var isOnline: Bool {
        state.withLock { $0.link != nil }
    }

    /// Connects to the relay and registers; queued `offline-message`s (requests sent while it was
    /// away) are then answered, late.
    func goOnline() {
        let (inbox, continuation) = AsyncStream<WireJSON>.makeStream()
        let opened: Int? = state.withLock { state in
            guard state.link == nil else { return nil }
            state.stopped = false
            let id = relay.open(SignalingLink(
                send: { frame in continuation.yield(frame) },
                close: { _, _ in continuation.finish() }
            ))
            state.link = Link(id: id, inbox: continuation)
            startTask(in: &state) { [self] in
                for await frame in inbox {
                    handle(frame)
                }
                // Closed by the relay (stop, or another socket registered our id): we are offline.
                self.state.withLock { state in
                    if state.link?.id == id { state.link = nil }
                }
            }
            return id
        }
        guard let id = opened else {
            continuation.finish()
            return
        }
        relay.receive([
            "type": "register", "peerId": .string(options.desktopPeerID),
            "deviceType": "desktop", "deviceInfo": .sortedStringMap(options.desktopDeviceInfo),
        ], from: id)
    }

    /// Disconnects from the relay: later requests are queued there and answered `peer-offline`.
    func goOffline() {
        guard let link = state.withLock({ state -> Link? in defer { state.link = nil }; return state.link }) else { return }
        relay.close(link.id)
        link.inbox.finish()
    }

    func stop() {
        let (link, tasks) = state.withLock { state -> (Link?, [Task<Void, Never>]) in
            state.stopped = true
            defer { state.link = nil; state.tasks = [:] }
            return (state.link, Array(state.tasks.values))
        }
        if let link {
            relay.close(link.id)
            link.inbox.finish()
        }
        for task in tasks { task.cancel() }
    }

    // MARK: - Inbound

    private func handle(_ frame: WireJSON) {
        switch frame["type"]?.stringValue {
        case "message":
            handleMessage(from: frame["from"]?.stringValue, payload: frame["payload"], replayed: false)
        case "offline-message":
            guard let original = frame["originalMessage"], original["type"]?.stringValue == "message" else { return }
            handleMessage(from: original["from"]?.stringValue, payload: original["payload"], replayed: true)
        default:
            // registered, peer-status, peers-list, error, …: nothing to do.
            break
        }
    }

    private func handleMessage(from: String?, payload: WireJSON?, replayed: Bool) {
        guard let from, let envelope = NotificationEnvelope.innerPayload(payload),
              let type = envelope["type"]?.stringValue,
              type == NotificationEnvelope.commandRequest || type == NotificationEnvelope.legacyCommandRequest
        else {
            // pair-ack, heartbeats, family time requests, …: not part of this simulation.
            return
        }
        guard let request = NotificationEnvelope.innerPayload(envelope["payload"]) else {
            logger.debug("desktop: command request without an object payload", metadata: ["from": "\(from)"])
            return
        }
        let requestID = request["id"] ?? .null
        let idText = requestID.stringValue ?? requestID.serialized
        let method = request["method"]?.stringValue ?? ""
        let params = request["params"] ?? [:]
        let now = Date()
        let nowMS = NotificationStore.nowMS(now)
        let onlineMobiles = relay.onlinePeers()
            .filter { $0.deviceType != "desktop" && $0.peerID != options.desktopPeerID }
            .map(\.peerID)
        let methods = DesktopNotificationMethods(
            shape: options.shape, unknownNamespace: options.unknownNamespace, onlineMobiles: onlineMobiles, date: now
        )

        let handled: DesktopNotificationMethods.Handled? = state.withLock { state in
            let ttl = NotificationStore.milliseconds(options.requestDedupTTL)
            state.recentRequests.removeAll { nowMS - $0.at >= ttl }
            let duplicate = state.recentRequests.contains { $0.id == idText }
            state.commands.append(NotificationSimulator.RecordedCommand(
                requestID: idText, method: method, from: from, envelopeType: type,
                payloadWasString: envelope["payload"]?.stringValue != nil, duplicate: duplicate,
                replayed: replayed, receivedAt: now, params: params
            ))
            // A repeated request id is dropped silently: no second response.
            guard !duplicate else { return nil }
            state.recentRequests.append((idText, nowMS))
            if state.recentRequests.count > options.requestDedupLimit {
                state.recentRequests.removeFirst(state.recentRequests.count - options.requestDedupLimit)
            }
            return methods.handle(method: method, params: params, store: &state.store)
        }
        guard let handled else {
            logger.debug("desktop: duplicate request dropped", metadata: ["id": "\(idText)"])
            return
        }
        logger.debug("desktop: command", metadata: ["method": "\(method)", "id": "\(idText)", "from": "\(from)"])

        for push in handled.pushes {
            sendEvents(fields: push.fields, to: push.to, families: options.pushFamilies, encoding: options.pushEncoding)
        }
        let response = NotificationEnvelope.response(id: requestID, outcome: handled.outcome, shape: options.shape)
        schedule(after: options.responseDelay) { [self] in send(response, to: from) }
        if options.duplicateResponses {
            schedule(after: options.responseDelay + options.duplicateDelay) { [self] in send(response, to: from) }
        }
    }

    // MARK: - Outbound

    /// Sends `notification.received` to one peer in each family; false when the desktop is offline.
    @discardableResult
    func sendEvents(
        fields: [WireJSON.Member], to peerID: String,
        families: [NotificationSimulator.PushFamily], encoding: NotificationSimulator.PushEncoding
    ) -> Bool {
        var sent = true
        for family in families {
            sent = send(NotificationEnvelope.received(fields: fields, family: family, encoding: encoding), to: peerID) && sent
        }
        return sent
    }

    /// One signaling `message` to `peerID` (the relay queues it if that peer is offline).
    @discardableResult
    private func send(_ payload: WireJSON, to peerID: String) -> Bool {
        guard let link = state.withLock({ $0.link }) else {
            logger.debug("desktop: offline, frame dropped", metadata: ["to": "\(peerID)"])
            return false
        }
        relay.receive(["type": "message", "to": .string(peerID), "payload": payload], from: link.id)
        return true
    }

    private func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) {
        guard delay > .zero else {
            body()
            return
        }
        state.withLock { state in
            guard !state.stopped else { return }
            startTask(in: &state) {
                try? await Task.sleep(for: delay)
                guard !Task.isCancelled else { return }
                body()
            }
        }
    }

    /// Starts a task that `stop()` cancels; it forgets itself when done.
    private func startTask(in state: inout State, _ body: @escaping @Sendable () async -> Void) {
        let key = state.nextTaskID
        state.nextTaskID += 1
        state.tasks[key] = Task { [self] in
            await body()
            _ = self.state.withLock { $0.tasks.removeValue(forKey: key) }
        }
    }

    // MARK: - State access

    func withStore<R>(_ body: (inout NotificationStore) -> R) -> R {
        state.withLock { body(&$0.store) }
    }

    var commands: [NotificationSimulator.RecordedCommand] {
        state.withLock { $0.commands }
    }
}
