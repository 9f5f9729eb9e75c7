import FlyingFox
import FlyingSocks
import Foundation
import Logging

/// Serves the relay over WebSocket with FlyingFox: every upgrade request (any path, like a `ws`
/// server bound to a port) becomes one relay connection; plain HTTP gets 426.
final class SignalingWebSocketServer: Sendable {
    private struct Running: Sendable {
        var server: HTTPServer
        var task: Task<Void, Never>
        var url: URL
    }

    private let relay: SignalingRelay
    private let logger: Logger
    private let running = Locked<Running?>(nil)
    private let stopping = Locked(false)

    init(relay: SignalingRelay, logger: Logger) {
        self.relay = relay
        self.logger = logger
    }

    var url: URL? {
        running.current?.url
    }

    /// Binds and serves; returns `ws://HOST:PORT` (the real port when `port` is 0).
    func start(host: String, port: UInt16) async throws -> URL {
        if let url { return url }
        let bindHost = host == "localhost" ? "127.0.0.1" : host
        let address: any SocketAddress
        do {
            address = bindHost.contains(":")
                ? try sockaddr_in6.inet6(ip6: bindHost, port: port)
                : try sockaddr_in.inet(ip4: bindHost, port: port)
        } catch {
            throw SimulatorError.cannotListen("\(host) is not a numeric IP address (\(error))")
        }
        let upgrade = WebSocketHTTPHandler(handler: MessageFrameWSHandler(handler: RelaySocketHandler(relay: relay, logger: logger)))
        let server = HTTPServer(
            config: HTTPServer.Configuration(address: address, timeout: 15, logger: FlyingFoxLogBridge(logger: logger, stopping: stopping)),
            handler: UpgradeOnlyHandler(upgrade: upgrade)
        )
        let failure = Locked<(any Error)?>(nil)
        let task = Task {
            do {
                try await server.run()
            } catch {
                failure.withLock { $0 = error }
            }
        }
        // Poll both outcomes: `waitUntilListening` would sit out its timeout if binding failed.
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while true {
            if let error = failure.current {
                throw SimulatorError.cannotListen("\(host):\(port): \(error)")
            }
            if await server.isListening, let listening = await server.listeningAddress {
                var boundPort = port
                if case .ip4(_, let actual) = listening { boundPort = actual }
                if case .ip6(_, let actual) = listening { boundPort = actual }
                let urlHost = bindHost.contains(":") ? "[\(bindHost)]" : bindHost
                let url = URL(string: "ws://\(urlHost):\(boundPort)")!
                running.withLock { $0 = Running(server: server, task: task, url: url) }
                logger.debug("signaling relay listening", metadata: ["url": "\(url)"])
                return url
            }
            guard ContinuousClock.now < deadline else {
                task.cancel()
                throw SimulatorError.cannotListen("\(host):\(port): timed out")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Closes every socket, then the listener.
    func stop() async {
        guard let state = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        stopping.withLock { $0 = true }
        relay.closeAll()
        // The accept loop never wakes up for a closed listener (epoll), so `stop` always sits out
        // its timeout: keep it just long enough for the close frames above to go out.
        await state.server.stop(timeout: 0.1)
        state.task.cancel()
        await state.task.value
    }

    private struct UpgradeOnlyHandler: HTTPHandler {
        let upgrade: WebSocketHTTPHandler

        func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                return HTTPResponse(statusCode: .upgradeRequired, headers: [.contentType: "text/plain"],
                                    body: Data("Upgrade Required".utf8))
            }
            return try await upgrade.handleRequest(request)
        }
    }
}

/// One WebSocket connection as a relay link: inbound text frames go to the relay, the relay's
/// frames go out as text frames.
private struct RelaySocketHandler: WSMessageHandler {
    let relay: SignalingRelay
    let logger: Logger

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let (outbound, continuation) = AsyncStream<WSMessage>.makeStream()
        let id = relay.open(SignalingLink(
            send: { frame in continuation.yield(.text(frame.serialized)) },
            close: { code, reason in
                continuation.yield(.close(WSCloseCode(code, reason: reason)))
                continuation.finish()
            }
        ))
        let relay = relay
        Task {
            for await message in client {
                switch message {
                case .text(let text):
                    relay.receive(text: text, from: id)
                case .data(let data):
                    // `ws` hands binary frames to JSON.parse as a Buffer, i.e. as UTF-8 text.
                    relay.receive(text: String(decoding: data, as: UTF8.self), from: id)
                case .close:
                    break
                }
            }
            relay.close(id)
            continuation.finish()
        }
        return outbound
    }
}
