import Logging
import TetherCore
import TetherNet

/// A connection to the signaling relay: one JSON text frame per message. The WebSocket one is
/// the real thing; tests can hand the backend another (an in-memory relay).
protocol SignalingChannel: Sendable {
    func send(_ text: String) async throws
    /// The next frame; nil once the relay closed the connection in an orderly way.
    func receive() async throws -> String?
    func close() async
}

/// Opens a channel to the relay. `longLived` connections (watch) keep the link alive with
/// pings and detect a dead one; one-shot commands rely on their request timeouts.
typealias SignalingConnector = @Sendable (_ longLived: Bool) async throws -> any SignalingChannel

struct WebSocketSignalingChannel: SignalingChannel {
    let connection: WebSocketConnection

    /// The connector for a relay URL. Frames are capped at 1 MiB, the relay's own `maxPayload`.
    /// Long-lived links ping at 40 % of `liveness` and are presumed dead after `liveness` of silence.
    static func connector(url: String, liveness: Duration = .seconds(75), logger: Logger) -> SignalingConnector {
        { longLived in
            let configuration = WebSocketConnection.Configuration(
                url: url, maxMessageSize: 1 << 20, pingInterval: longLived ? liveness * 0.4 : nil,
                liveness: longLived ? liveness : nil)
            return WebSocketSignalingChannel(connection: try await WebSocketConnection.connect(configuration, logger: logger))
        }
    }

    func send(_ text: String) async throws { try await connection.send(text: text) }

    func receive() async throws -> String? {
        switch try await connection.receive() {
        case .text(let text)?: return text
        case .binary(let bytes)?: return String(decoding: bytes, as: UTF8.self)
        case nil: return nil
        }
    }

    func close() async { await connection.close() }
}
