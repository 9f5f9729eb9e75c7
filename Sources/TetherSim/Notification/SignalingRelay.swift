import Foundation
import Logging

/// One socket on the relay: a WebSocket connection, or the in-process desktop's link.
struct SignalingLink: Sendable {
    /// Delivers one frame. Must not block or call back into the relay: the relay calls it under
    /// its lock so that every peer sees frames in the order the relay decided them.
    let send: @Sendable (WireJSON) -> Void
    /// Closes the socket from the relay's side (close frame, then end).
    let close: @Sendable (_ code: UInt16, _ reason: String) -> Void
}

/// The signaling relay of notes §4.1 (desktop-embedded `signaling-server.js` / standalone
/// `signaling-server/index.js`): no auth, one JSON object per text frame, one socket per peer id,
/// an offline queue replayed on `register`.
///
/// Client → relay: `register`, `message`, `offer`/`answer`/`ice-candidate`/`ice-candidates`,
/// `pairing:request`/`pairing:confirmation`/`pairing:reject`, `get-peers`, `peer-status`, `ping`.
/// Relay → client: `registered`, `offline-message`, `peer-status`, `message`, `peer-offline`,
/// `peers-list`, `peer-status-response`, `pong`, `error`.
final class SignalingRelay: Sendable {
    struct Limits: Sendable {
        /// Offline queue per peer; the oldest message is dropped beyond it.
        var queueLimit = 100
        var queueTTLms = 24 * 3600 * 1000
        /// `maxPayload` (1 MiB): a bigger frame closes the socket with 1009, as `ws` does.
        var maxPayload = 1 << 20
    }

    struct Peer: Sendable, Equatable {
        var peerID: String
        /// Absent when the peer registered without one (then omitted from every frame, like `undefined`).
        var deviceType: String?
        var deviceInfo: WireJSON
        var connectedAt: Int
    }

    private struct Connection {
        var link: SignalingLink
        var peer: Peer?
    }

    private struct Queued {
        var message: WireJSON
        var storedAt: Int
    }

    private struct State {
        var nextID = 1
        var connections: [Int: Connection] = [:]
        /// Peer id → the connection registered under it.
        var peers: [String: Int] = [:]
        var queues: [String: [Queued]] = [:]
    }

    /// The frame types relayed to `to` with `from` added (WebRTC and pairing; `message` is separate).
    static let forwardedTypes: Set<String> = [
        "offer", "answer", "ice-candidate", "ice-candidates",
        "pairing:request", "pairing:confirmation", "pairing:reject",
    ]

    private let state = Locked(State())
    private let limits: Limits
    private let logger: Logger

    init(limits: Limits = Limits(), logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    // MARK: - Connections

    /// A new socket; returns its connection id.
    func open(_ link: SignalingLink) -> Int {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.connections[id] = Connection(link: link)
            return id
        }
    }

    /// The socket went away (either side closed it). Idempotent.
    func close(_ id: Int) {
        state.withLock { state in
            guard let connection = state.connections.removeValue(forKey: id) else { return }
            guard let peer = connection.peer, state.peers[peer.peerID] == id else { return }
            state.peers[peer.peerID] = nil
            logger.debug("relay: peer offline", metadata: ["peer": "\(peer.peerID)"])
            var status: WireJSON = ["type": "peer-status", "peerId": .string(peer.peerID), "status": "offline"]
            if let deviceType = peer.deviceType { status["deviceType"] = .string(deviceType) }
            status["timestamp"] = .int(NotificationStore.nowMS())
            broadcast(status, except: id, in: state)
        }
    }

    /// Closes every socket ("going away") and forgets all peers and queues.
    func closeAll() {
        let links = state.withLock { state -> [SignalingLink] in
            defer { state = State(nextID: state.nextID) }
            return state.connections.values.map(\.link)
        }
        for link in links { link.close(1001, "Going Away") }
    }

    // MARK: - Inbound frames

    /// One text frame from a socket.
    func receive(text: String, from id: Int) {
        guard text.utf8.count <= limits.maxPayload else {
            let link = state.withLock { $0.connections[id]?.link }
            link?.close(1009, "Max payload size exceeded")
            close(id)
            return
        }
        guard let frame = SignalingJSONParser.parse(text), frame.wireIsObject else {
            reply(id, error: "Invalid message format")
            return
        }
        receive(frame, from: id)
    }

    /// One decoded frame from a socket.
    func receive(_ frame: WireJSON, from id: Int) {
        let type = frame["type"]?.stringValue
        logger.trace("relay: frame in", metadata: ["connection": "\(id)", "type": "\(type ?? "-")"])
        switch type {
        case "register": register(frame, from: id)
        case "message": relayMessage(frame, from: id)
        case "get-peers": listPeers(for: id)
        case "peer-status": peerStatus(frame, for: id)
        case "ping": reply(id, ["type": "pong", "timestamp": .int(NotificationStore.nowMS())])
        case let type? where Self.forwardedTypes.contains(type): forward(frame, type: type, from: id)
        default: reply(id, error: "Unknown message type: \(type ?? "undefined")")
        }
    }

    private func register(_ frame: WireJSON, from id: Int) {
        guard let peerID = frame["peerId"]?.stringValue, !peerID.isEmpty else {
            reply(id, error: "peerId is required for registration")
            return
        }
        state.withLock { state in
            guard state.connections[id] != nil else { return }
            let now = NotificationStore.nowMS()
            var isReconnect = false
            // One socket per peer id: a second registration kicks the older socket. Its own close
            // must then not unregister the new one, so it forgets its peer first.
            if let existing = state.peers[peerID], existing != id, var old = state.connections[existing] {
                old.peer = nil
                state.connections[existing] = old
                old.link.close(1000, "Replaced by new connection")
                isReconnect = true
            }
            // A socket re-registering under another id gives up the old one.
            if let previous = state.connections[id]?.peer, previous.peerID != peerID, state.peers[previous.peerID] == id {
                state.peers[previous.peerID] = nil
            }
            let peer = Peer(
                peerID: peerID,
                deviceType: frame["deviceType"]?.stringValue,
                deviceInfo: frame["deviceInfo"].flatMap { $0.wireIsObject ? $0 : nil } ?? [:],
                connectedAt: now
            )
            state.connections[id]?.peer = peer
            state.peers[peerID] = id
            logger.debug("relay: registered", metadata: ["peer": "\(peerID)", "reconnect": "\(isReconnect)"])

            var registered: WireJSON = ["type": "registered", "peerId": .string(peerID), "serverTime": .int(now)]
            if isReconnect { registered["isReconnect"] = true }
            deliver(registered, to: id, in: state)

            let queued = (state.queues.removeValue(forKey: peerID) ?? []).filter { now - $0.storedAt < limits.queueTTLms }
            for item in queued {
                deliver([
                    "type": "offline-message", "originalMessage": item.message,
                    "storedAt": .int(item.storedAt), "deliveredAt": .int(now),
                ], to: id, in: state)
            }

            var status: WireJSON = ["type": "peer-status", "peerId": .string(peerID), "status": "online"]
            if let deviceType = peer.deviceType { status["deviceType"] = .string(deviceType) }
            status["deviceInfo"] = peer.deviceInfo
            status["timestamp"] = .int(now)
            broadcast(status, except: id, in: state)
        }
    }

    private func relayMessage(_ frame: WireJSON, from id: Int) {
        state.withLock { state in
            guard let from = state.connections[id]?.peer?.peerID else {
                deliver(errorFrame("Not registered: send register first"), to: id, in: state)
                return
            }
            guard let to = frame["to"]?.stringValue, !to.isEmpty else {
                deliver(errorFrame(#"Missing "to" field in message"#), to: id, in: state)
                return
            }
            let now = NotificationStore.nowMS()
            var message: WireJSON = ["type": "message", "from": .string(from)]
            if let payload = frame["payload"] { message["payload"] = payload }
            message["timestamp"] = .int(now)
            if let target = state.peers[to] {
                deliver(message, to: target, in: state)
                return
            }
            // Target offline: keep it for its next `register`, and tell the sender.
            var queue = (state.queues[to] ?? []).filter { now - $0.storedAt < limits.queueTTLms }
            queue.append(Queued(message: message, storedAt: now))
            if queue.count > limits.queueLimit { queue.removeFirst(queue.count - limits.queueLimit) }
            state.queues[to] = queue
            logger.debug("relay: queued for offline peer", metadata: ["peer": "\(to)", "queued": "\(queue.count)"])
            deliver(["type": "peer-offline", "peerId": .string(to), "timestamp": .int(now)], to: id, in: state)
        }
    }

    /// WebRTC and pairing frames: the same object with `to` replaced by `from`; not queued.
    private func forward(_ frame: WireJSON, type: String, from id: Int) {
        state.withLock { state in
            guard let from = state.connections[id]?.peer?.peerID else {
                deliver(errorFrame("Not registered: send register first"), to: id, in: state)
                return
            }
            guard let to = frame["to"]?.stringValue, !to.isEmpty else {
                deliver(errorFrame(#"Missing "to" field in \#(type)"#), to: id, in: state)
                return
            }
            guard let target = state.peers[to] else {
                deliver(["type": "peer-offline", "peerId": .string(to), "timestamp": .int(NotificationStore.nowMS())],
                        to: id, in: state)
                return
            }
            let members = frame.wireMembers.map { member in
                member.key == "to" ? WireJSON.Member(key: "from", value: .string(from)) : member
            }
            deliver(.object(members), to: target, in: state)
        }
    }

    private func listPeers(for id: Int) {
        state.withLock { state in
            let peers = state.peers.values
                .filter { $0 != id }
                .compactMap { state.connections[$0]?.peer }
                .sorted { ($0.connectedAt, $0.peerID) < ($1.connectedAt, $1.peerID) }
            let list: [WireJSON] = peers.map { peer in
                var entry: WireJSON = ["peerId": .string(peer.peerID)]
                if let deviceType = peer.deviceType { entry["deviceType"] = .string(deviceType) }
                entry["deviceInfo"] = peer.deviceInfo
                entry["connectedAt"] = .int(peer.connectedAt)
                return entry
            }
            deliver(["type": "peers-list", "peers": .array(list), "count": .int(list.count)], to: id, in: state)
        }
    }

    /// `peer-status` (embedded relay only): is `peerId` online?
    private func peerStatus(_ frame: WireJSON, for id: Int) {
        guard let peerID = frame["peerId"]?.stringValue, !peerID.isEmpty else {
            reply(id, error: "peerId is required")
            return
        }
        state.withLock { state in
            let peer = state.peers[peerID].flatMap { state.connections[$0]?.peer }
            var response: WireJSON = [
                "type": "peer-status-response", "peerId": .string(peerID), "status": .string(peer == nil ? "offline" : "online"),
            ]
            if let deviceType = peer?.deviceType { response["deviceType"] = .string(deviceType) }
            if let peer { response["deviceInfo"] = peer.deviceInfo }
            response["timestamp"] = .int(NotificationStore.nowMS())
            deliver(response, to: id, in: state)
        }
    }

    // MARK: - Outbound

    private func errorFrame(_ text: String) -> WireJSON {
        ["type": "error", "error": .string(text), "timestamp": .int(NotificationStore.nowMS())]
    }

    private func reply(_ id: Int, error text: String) {
        reply(id, errorFrame(text))
    }

    private func reply(_ id: Int, _ frame: WireJSON) {
        state.withLock { deliver(frame, to: id, in: $0) }
    }

    private func deliver(_ frame: WireJSON, to id: Int, in state: State) {
        state.connections[id]?.link.send(frame)
    }

    private func broadcast(_ frame: WireJSON, except id: Int, in state: State) {
        for (other, connection) in state.connections where other != id && connection.peer != nil {
            connection.link.send(frame)
        }
    }

    // MARK: - Inspection

    /// Registered peers, oldest first.
    func onlinePeers() -> [Peer] {
        state.withLock { state in
            state.peers.values.compactMap { state.connections[$0]?.peer }
                .sorted { ($0.connectedAt, $0.peerID) < ($1.connectedAt, $1.peerID) }
        }
    }

    func isOnline(_ peerID: String) -> Bool {
        state.withLock { $0.peers[peerID] != nil }
    }

    /// Messages waiting for `peerID`'s next registration (expired ones excluded).
    func queuedCount(for peerID: String) -> Int {
        let now = NotificationStore.nowMS()
        return state.withLock { state in
            (state.queues[peerID] ?? []).count { now - $0.storedAt < limits.queueTTLms }
        }
    }
}
