import FlyingFox
import FlyingSocks
import Foundation
import Logging

/// A FlyingFox server on one loopback (or given) address, started and stopped on demand, that
/// remembers its open streaming bodies so `stop()` can end them instead of waiting on them.
final class EmbeddedHTTPServer: Sendable {
    typealias Handler = @Sendable (HTTPRequest, StreamRegistry) async -> HTTPResponse

    private struct Running: Sendable {
        var server: HTTPServer
        var task: Task<Void, Never>
        var url: URL
    }

    private let handler: Handler
    private let logger: Logger
    private let running = Locked<Running?>(nil)
    private let stopping = Locked(false)
    private let streams = StreamRegistry()

    init(logger: Logger, handler: @escaping Handler) {
        self.logger = logger
        self.handler = handler
    }

    var baseURL: URL? {
        running.current?.url
    }

    /// Binds and starts serving; returns `http://HOST:PORT` (the real port when `port` is 0).
    func start(host: String, port: UInt16) async throws -> URL {
        if let url = baseURL { return url }
        let address: any SocketAddress
        let bindHost = host == "localhost" ? "127.0.0.1" : host
        do {
            if bindHost.contains(":") {
                address = try sockaddr_in6.inet6(ip6: bindHost, port: port)
            } else {
                address = try sockaddr_in.inet(ip4: bindHost, port: port)
            }
        } catch {
            throw SimulatorError.cannotListen("\(host) is not a numeric IP address (\(error))")
        }
        let config = HTTPServer.Configuration(
            address: address,
            timeout: 60,
            logger: FlyingFoxLogBridge(logger: logger, stopping: stopping)
        )
        let server = HTTPServer(config: config, handler: ClosureHandler(handler: handler, streams: streams))
        let failure = Locked<(any Error)?>(nil)
        let task = Task {
            do {
                try await server.run()
            } catch {
                failure.withLock { $0 = error }
            }
        }
        // `waitUntilListening` would sit out its timeout if binding failed, so poll both outcomes.
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while true {
            if let error = failure.current {
                throw SimulatorError.cannotListen("\(host):\(port): \(error)")
            }
            if await server.isListening, let listening = await server.listeningAddress {
                let boundPort: UInt16
                switch listening {
                case .ip4(_, let port), .ip6(_, let port): boundPort = port
                case .unix: boundPort = port
                }
                let urlHost = bindHost.contains(":") ? "[\(bindHost)]" : bindHost
                let url = URL(string: "http://\(urlHost):\(boundPort)")!
                running.withLock { $0 = Running(server: server, task: task, url: url) }
                logger.debug("simulator listening", metadata: ["url": "\(url)"])
                return url
            }
            guard ContinuousClock.now < deadline else {
                task.cancel()
                throw SimulatorError.cannotListen("\(host):\(port): timed out")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Ends every open stream abruptly, closes the listener and waits for the connections to go.
    func stop() async {
        guard let state = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        stopping.withLock { $0 = true }
        streams.abortAll()
        // FlyingFox waits up to `timeout` for its accept loop to end after closing the listener, and
        // on Linux it did not end by itself (every stop took the full timeout). The streams are
        // already ended, so cancel at once.
        await state.server.stop(timeout: 0)
        state.task.cancel()
        await state.task.value
    }

    private struct ClosureHandler: HTTPHandler {
        let handler: Handler
        let streams: StreamRegistry
        func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
            await handler(request, streams)
        }
    }
}

/// The open streaming bodies of one server, so that stopping it can end them.
final class StreamRegistry: Sendable {
    private let bodies = Locked<[ObjectIdentifier: StreamingBody]>([:])

    /// A streaming body that the server's `stop()` will end.
    func makeBody(maxChunk: Int = .max, chunkDelay: Duration = .zero) -> StreamingBody {
        let body = StreamingBody(maxChunk: maxChunk, chunkDelay: chunkDelay)
        let key = ObjectIdentifier(body)
        bodies.withLock { $0[key] = body }
        body.onTermination { [bodies] in
            _ = bodies.withLock { $0.removeValue(forKey: key) }
        }
        return body
    }

    var openCount: Int {
        bodies.withLock { $0.count }
    }

    func abortAll() {
        for body in bodies.withLock({ Array($0.values) }) {
            body.abort()
        }
    }
}
