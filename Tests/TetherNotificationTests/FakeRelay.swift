import Foundation
import Synchronization
import TetherCore
import TetherNet
@testable import TetherNotification
import TetherStreaming

/// An in-memory signaling relay (protocols/notification.md §4.1) with scripted desktop peers on
/// it: the far end of the backend's tests, written from the notes for these tests (it is not
/// the project's simulator). It registers peers (a second registration of an id kicks the
/// first), lists them, relays `message`s, answers `peer-offline` and keeps frames for offline
/// peers, replaying them as `offline-message` when the peer registers.
final class FakeRelay: Sendable {
    /// How a fake desktop answers one request.
    indirect enum Reply: Sendable {
        /// A JSON-RPC response; `stringified` as the real desktop sends it (iOS expects an object).
        case result(JSONValue, stringified: Bool = true)
        case error(JSONValue, stringified: Bool = true)
        /// Any envelope, sent as is (events).
        case envelope(JSONValue)
        case after(Duration, [Reply])
    }

    typealias Behaviour = @Sendable (_ method: String, _ params: JSONObject) -> [Reply]

    private struct Client {
        let outbox: AsyncStream<String>.Continuation
        var peerID: String?
        var deviceType: String?
    }

    private struct State {
        var nextClient = 0
        var clients: [Int: Client] = [:]
        var desktops: [String: (online: Bool, behaviour: Behaviour)] = [:]
        var offline: [String: [JSONValue]] = [:]
        var requests: [JSONValue] = []
        var registrations: [String] = []
        var up = true
        /// While set, an upgrade is answered with this HTTP status (a proxy in front of a relay
        /// that is restarting: 502, 503).
        var upgradeStatus: Int?
        var answersGetPeers = true
    }

    private let state = Mutex(State())

    // MARK: Scripting

    var isUp: Bool {
        get { state.withLock { $0.up } }
        set { state.withLock { $0.up = newValue } }
    }

    var upgradeStatus: Int? {
        get { state.withLock { $0.upgradeStatus } }
        set { state.withLock { $0.upgradeStatus = newValue } }
    }

    var answersGetPeers: Bool {
        get { state.withLock { $0.answersGetPeers } }
        set { state.withLock { $0.answersGetPeers = newValue } }
    }

    /// Command requests the desktops received (`{id, method, params, auth, timestamp}`), in order.
    var requests: [JSONValue] { state.withLock { $0.requests } }
    var methods: [String] { requests.compactMap { $0["method"]?.string } }
    /// Every peer id that registered, in order.
    var registrations: [String] { state.withLock { $0.registrations } }

    func addDesktop(_ id: String, online: Bool = true, behaviour: @escaping Behaviour) {
        state.withLock { $0.desktops[id] = (online, behaviour) }
    }

    /// Brings a desktop on or off line; coming online, it gets what the relay kept for it.
    func setDesktop(_ id: String, online: Bool) {
        let kept: [JSONValue] = state.withLock { state in
            state.desktops[id]?.online = online
            guard online else { return [] }
            defer { state.offline[id] = nil }
            return state.offline[id] ?? []
        }
        for frame in kept { desktopReceived(id, frame) }
    }

    /// An envelope from a desktop to a peer (kept if the peer is offline).
    func push(from desktop: String, to peer: String, envelope: JSONValue) {
        route(from: desktop, to: peer, payload: envelope)
    }

    /// A frame the relay keeps for `peer` as if it had been offline (replayed on register).
    func keepForOffline(_ peer: String, _ frame: JSONValue) {
        state.withLock { $0.offline[peer, default: []].append(frame) }
    }

    /// Drops every connection registered as `peer`.
    func kick(_ peer: String) {
        let outboxes = state.withLock { state in
            let ids = state.clients.filter { $0.value.peerID == peer }.map(\.key)
            return ids.compactMap { state.clients.removeValue(forKey: $0)?.outbox }
        }
        for outbox in outboxes { outbox.finish() }
    }

    func isRegistered(_ peer: String) -> Bool { state.withLock { $0.clients.values.contains { $0.peerID == peer } } }

    // MARK: Connections

    /// A new connection, or `NetError(.connect)` while the relay is down.
    func connect() throws -> InMemorySignalingChannel {
        let (id, stream) = try attach()
        return InMemorySignalingChannel(relay: self, clientID: id, stream: stream)
    }

    func attach() throws -> (Int, AsyncStream<String>) {
        let (stream, outbox) = AsyncStream.makeStream(of: String.self)
        if let status = upgradeStatus {
            throw NetError(.status(status), url: "ws://fake-relay", detail: "HTTP \(status) to the upgrade")
        }
        let id: Int? = state.withLock { state in
            guard state.up else { return nil }
            state.nextClient += 1
            state.clients[state.nextClient] = Client(outbox: outbox)
            return state.nextClient
        }
        guard let id else { throw NetError(.connect, url: "ws://fake-relay", detail: "Connection refused") }
        return (id, stream)
    }

    func disconnect(_ clientID: Int) {
        state.withLock { $0.clients.removeValue(forKey: clientID) }?.outbox.finish()
    }

    func isConnected(_ clientID: Int) -> Bool { state.withLock { $0.clients[clientID] != nil } }

    /// A frame from client `clientID`.
    func received(_ text: String, from clientID: Int) {
        guard let frame = try? JSONParser.parse(text), let type = frame["type"]?.string else {
            reply(clientID, ["type": "error", "error": "Invalid message format"])
            return
        }
        switch type {
        case "register":
            guard let peer = frame["peerId"]?.string, !peer.isEmpty else {
                reply(clientID, ["type": "error", "error": "peerId is required for registration"])
                return
            }
            let (kicked, kept): ([AsyncStream<String>.Continuation], [JSONValue]) = state.withLock { state in
                let others = state.clients.filter { $0.key != clientID && $0.value.peerID == peer }.map(\.key)
                let kicked = others.compactMap { state.clients.removeValue(forKey: $0)?.outbox }
                state.clients[clientID]?.peerID = peer
                state.clients[clientID]?.deviceType = frame["deviceType"]?.string
                state.registrations.append(peer)
                defer { state.offline[peer] = nil }
                return (kicked, state.offline[peer] ?? [])
            }
            for outbox in kicked { outbox.finish() }
            reply(clientID, ["type": "registered", "peerId": .string(peer), "serverTime": 1795311063212])
            for original in kept {
                reply(clientID, ["type": "offline-message", "originalMessage": original, "storedAt": 1795311000000,
                                 "deliveredAt": 1795311063212])
            }
        case "get-peers":
            let (answer, peers): (Bool, [JSONValue]) = state.withLock { state in
                let clients = state.clients.values.compactMap { client -> JSONValue? in
                    guard let peer = client.peerID else { return nil }
                    return ["peerId": .string(peer), "deviceType": JSONValue(client.deviceType), "deviceInfo": [:], "connectedAt": 1]
                }
                let desktops = state.desktops.filter(\.value.online).keys.sorted().map { id -> JSONValue in
                    ["peerId": .string(id), "deviceType": "desktop", "deviceInfo": ["name": "fake"], "connectedAt": 1]
                }
                return (state.answersGetPeers, clients + desktops)
            }
            if answer { reply(clientID, ["type": "peers-list", "peers": .array(peers), "count": .int(Int64(peers.count))]) }
        case "message":
            guard let to = frame["to"]?.string else {
                reply(clientID, ["type": "error", "error": "Missing \"to\" field in message"])
                return
            }
            let from = state.withLock { $0.clients[clientID]?.peerID } ?? "unregistered"
            if !route(from: from, to: to, payload: frame["payload"] ?? .null) {
                reply(clientID, ["type": "peer-offline", "peerId": .string(to), "timestamp": 1])
            }
        case "ping":
            reply(clientID, ["type": "pong", "timestamp": 1])
        default:
            reply(clientID, ["type": "error", "error": .string("Unknown message type: \(type)")])
        }
    }

    private func reply(_ clientID: Int, _ frame: JSONValue) {
        _ = state.withLock { $0.clients[clientID]?.outbox }?.yield(frame.serialized)
    }

    /// Forwards a `message`; returns false when `to` is offline (the frame is then kept for it).
    @discardableResult
    private func route(from: String, to: String, payload: JSONValue) -> Bool {
        let frame: JSONValue = ["type": "message", "from": .string(from), "payload": payload, "timestamp": 1795311063300]
        enum Target { case client(AsyncStream<String>.Continuation), desktop, kept }
        let target: Target = state.withLock { state in
            if let client = state.clients.values.first(where: { $0.peerID == to }) { return .client(client.outbox) }
            if state.desktops[to]?.online == true { return .desktop }
            state.offline[to, default: []].append(frame)
            return .kept
        }
        switch target {
        case .client(let outbox): outbox.yield(frame.serialized)
        case .desktop: desktopReceived(to, frame)
        case .kept: return false
        }
        return true
    }

    // MARK: Desktops

    private func desktopReceived(_ desktop: String, _ frame: JSONValue) {
        guard let from = frame["from"]?.string, frame["payload"]?["type"]?.string == "chainlesschain:command:request",
              let request = NotificationWire.object(frame["payload"]?["payload"]), let id = request["id"]?.stringish,
              let method = request["method"]?.string else { return }
        let behaviour = state.withLock { state in
            state.requests.append(request)
            return state.desktops[desktop]?.behaviour
        }
        for reply in behaviour?(method, request["params"]?.object ?? [:]) ?? [] {
            send(reply, from: desktop, to: from, id: id)
        }
    }

    private func send(_ reply: Reply, from desktop: String, to peer: String, id: String) {
        switch reply {
        case .result(let result, let stringified):
            route(from: desktop, to: peer, payload: Self.response(id: id, result: result, error: .null, stringified: stringified))
        case .error(let error, let stringified):
            route(from: desktop, to: peer, payload: Self.response(id: id, result: .null, error: error, stringified: stringified))
        case .envelope(let envelope):
            route(from: desktop, to: peer, payload: envelope)
        case .after(let delay, let replies):
            Task {
                try? await Task.sleep(for: delay)
                for reply in replies { send(reply, from: desktop, to: peer, id: id) }
            }
        }
    }

    static func response(id: String, result: JSONValue, error: JSONValue, stringified: Bool) -> JSONValue {
        let body: JSONValue = ["jsonrpc": "2.0", "id": .string(id), "result": result, "error": error]
        return ["type": "chainlesschain:command:response", "payload": stringified ? .string(body.serialized) : body]
    }
}

/// A client connection to a `FakeRelay`.
final class InMemorySignalingChannel: SignalingChannel, @unchecked Sendable {
    let relay: FakeRelay
    let clientID: Int
    /// Read by the session's one reader task only.
    private var iterator: AsyncStream<String>.AsyncIterator

    init(relay: FakeRelay, clientID: Int, stream: AsyncStream<String>) {
        self.relay = relay
        self.clientID = clientID
        iterator = stream.makeAsyncIterator()
    }

    func send(_ text: String) async throws {
        guard relay.isConnected(clientID) else {
            throw NetError(.interrupted, url: "ws://fake-relay", detail: "the connection is closed")
        }
        relay.received(text, from: clientID)
    }

    func receive() async throws -> String? {
        let text = await iterator.next()
        try Task.checkCancellation()
        return text
    }

    func close() async { relay.disconnect(clientID) }
}
