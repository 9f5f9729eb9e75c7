import FlyingFox
import FlyingSocks
import Foundation
import Testing
import TetherCore
@testable import TetherNotification

/// The backend as the CLI builds it (`NotificationRelayBackend(configuration:logger:)`), over a
/// real WebSocket: the fake relay served by FlyingFox, the libcurl-driven client in front.
@Suite(.serialized) struct NotificationEndToEndTests {
    /// The fake relay behind FlyingFox's WebSocket handler: one relay connection per socket.
    struct RelaySocket: WSMessageHandler {
        let relay: FakeRelay

        func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
            let (id, outbox) = try relay.attach()
            Task {
                for await message in client {
                    if case .text(let text) = message { relay.received(text, from: id) }
                }
                relay.disconnect(id)
            }
            return AsyncStream { continuation in
                let task = Task {
                    for await text in outbox { continuation.yield(.text(text)) }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }
    }

    func withRelay(_ body: (FakeRelay, UInt16, String) async throws -> Void) async throws {
        let relay = FakeRelay()
        let server = HTTPServer(address: try sockaddr_in.inet(ip4: "127.0.0.1", port: 0), timeout: 30, logger: .disabled)
        await server.appendRoute("/", to: WebSocketHTTPHandler(handler: MessageFrameWSHandler(handler: RelaySocket(relay: relay))))
        let task = Task { _ = try? await server.run() }
        try await server.waitUntilListening()
        guard case .ip4(_, let port)? = await server.listeningAddress else { throw CocoaError(.featureUnsupported) }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("tether-e2e-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        do {
            try await body(relay, port, state)
        } catch {
            await server.stop(timeout: 0)
            task.cancel()
            throw error
        }
        await server.stop(timeout: 0)
        task.cancel()
    }

    func backend(_ url: String, state: String) -> NotificationRelayBackend {
        NotificationRelayBackend(configuration: .init(url: url, peerID: "tether-e2e", desktop: nil, profile: "e2e",
                                                      stateDirectory: state, timeout: .seconds(5)), logger: quietLogger)
    }

    @Test func commandsAndPushesOverARealWebSocket() async throws {
        try await withRelay { relay, port, state in
            relay.addDesktop("pc-1", behaviour: FakeDesktops.desktop)
            let backend = backend("ws://127.0.0.1:\(port)/", state: state)
            #expect(try await backend.unreadCount() == 3)
            #expect(try await backend.listNotifications(unreadOnly: false, limit: 5, offset: nil).count == 2)
            #expect(try await backend.markRead(ids: ["n-7"])["marked_count"] == 1)
            #expect(try await backend.check().reachable)

            let events = Collected<Event>()
            let watching = Task { for try await event in backend.watch() { events.append(event) } }
            defer { watching.cancel() }
            try await events.wait { $0.contains { $0.data["state"] == "connected" } }
            relay.push(from: "pc-1", to: "tether-e2e", envelope: try #require(try Fixture.entry("relay-frames", "event-flat-string")["payload"]))
            let received = try await events.wait { $0.contains { $0.type == .notificationReceived } }
            #expect(received.last?.data["id"] == "notif-2")
        }
    }

    @Test func anUnreachableRelayQueuesAndAWrongURLIsAConfigurationError() async throws {
        var closedPort: UInt16 = 0
        try await withRelay { _, port, _ in closedPort = port }
        try await withRelay { (relay, port, state) async throws in
            relay.addDesktop("pc-1", behaviour: FakeDesktops.desktop)
            let down = backend("ws://127.0.0.1:\(closedPort)/", state: state)
            #expect(try await down.clearNotifications()["status"] == "queued")
            #expect(await TetherError.from { _ = try await down.unreadCount() }?.code == .unavailable)

            let wrong = backend("ws://127.0.0.1:\(port)/not-the-relay", state: state)
            #expect(await TetherError.from { _ = try await wrong.unreadCount() }?.code == .configuration)

            // The same state directory, the right URL: the queued clear goes first.
            #expect(try await backend("ws://127.0.0.1:\(port)/", state: state).unreadCount() == 3)
            #expect(relay.methods == ["notification.clearAll", "notification.getUnreadCount"])
        }
    }
}
