import FlyingFox
import FlyingSocks
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--listen ws://IP:PORT` and `--listen unix://PATH` (the daemon's transport): an HTTP upgrade,
/// then one JSON-RPC message per text frame (note §1, §6a, §6b).
extension CodexAppServerSimulator {
    struct Transport: Sendable {
        var server: HTTPServer?
        var task: Task<Void, Never>?
        var url: URL?
        var unixPath: String?
        var stopping = Locked(false)
    }

    /// What the unix-socket handshake adds (note §1).
    static let maxUnfragmentedHeader = "x-codex-websocket-max-unfragmented-message-bytes"
    static let maxUnfragmented = 16_777_216

    /// Binds on `host:port` and serves; returns `ws://HOST:PORT` (the real port when `port` is 0).
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) async throws -> URL {
        if let url = transport.withLock({ $0.url }) { return url }
        let bindHost = host == "localhost" ? "127.0.0.1" : host
        let address: any SocketAddress
        do {
            address = bindHost.contains(":")
                ? try sockaddr_in6.inet6(ip6: bindHost, port: port)
                : try sockaddr_in.inet(ip4: bindHost, port: port)
        } catch {
            throw SimulatorError.cannotListen("\(host) is not a numeric IP address (\(error))")
        }
        let server = try await serve(address: address, describe: "\(host):\(port)", unix: false)
        guard let listening = await server.listeningAddress else { throw SimulatorError.cannotListen("\(host):\(port)") }
        var boundPort = port
        if case .ip4(_, let actual) = listening { boundPort = actual }
        if case .ip6(_, let actual) = listening { boundPort = actual }
        let urlHost = bindHost.contains(":") ? "[\(bindHost)]" : bindHost
        let url = URL(string: "ws://\(urlHost):\(boundPort)")!
        transport.withLock { $0.url = url }
        logger.debug("codex app-server sim listening", metadata: ["url": "\(url)"])
        return url
    }

    /// Binds a unix socket at `path` (a stale socket file there is replaced) and serves the same
    /// WebSocket protocol on it, with no auth; returns `unix://PATH`.
    public func start(unixPath path: String) async throws -> URL {
        if let url = transport.withLock({ $0.url }) { return url }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & 0o170000) == 0o140000 else { throw SimulatorError.cannotListen("\(path) exists and is not a socket") }
            unlink(path)
        }
        _ = try await serve(address: sockaddr_un.unix(path: path), describe: path, unix: true)
        let url = URL(string: "unix://\(path)")!
        transport.withLock {
            $0.url = url
            $0.unixPath = path
        }
        return url
    }

    private func serve(address: some SocketAddress, describe: String, unix: Bool) async throws -> HTTPServer {
        let stopping = transport.withLock { $0.stopping }
        let handler = AppServerHTTPHandler(sim: self, token: unix ? nil : options.token, unix: unix)
        let server = HTTPServer(
            config: HTTPServer.Configuration(address: address, timeout: 15, logger: FlyingFoxLogBridge(logger: logger, stopping: stopping)),
            handler: handler
        )
        let failure = Locked<(any Error)?>(nil)
        let task = Task {
            do {
                try await server.run()
            } catch {
                failure.withLock { $0 = error }
            }
        }
        transport.withLock {
            $0.server = server
            $0.task = task
        }
        // Poll both outcomes: `waitUntilListening` would sit out its timeout if binding failed.
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while true {
            if let error = failure.current { throw SimulatorError.cannotListen("\(describe): \(error)") }
            if await server.isListening { return server }
            guard ContinuousClock.now < deadline else {
                task.cancel()
                throw SimulatorError.cannotListen("\(describe): timed out")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Ends every running turn (`interrupted`), closes every connection and the listener.
    public func stop() async {
        let running = transport.withLock { transport -> (HTTPServer?, Task<Void, Never>?, String?) in
            defer { transport.server = nil; transport.task = nil }
            return (transport.server, transport.task, transport.unixPath)
        }
        transport.withLock { $0.stopping.withLock { $0 = true } }
        let turns = state.withLock { state in state.threads.values.compactMap(\.active) }
        for turn in turns { turn.interrupt() }
        for turn in turns { await turn.task?.value }
        let connections = state.withLock { state in
            defer { state.connections = [:] }
            return Array(state.connections.values)
        }
        for connection in connections { connection.outbound.close() }
        if let server = running.0 {
            await server.stop(timeout: 0.1)
        }
        running.1?.cancel()
        await running.1?.value
        if let path = running.2 { unlink(path) }
    }
}

/// Routes one HTTP request: health checks, the refusals codex makes (any `Origin` → 403; a
/// missing or wrong bearer token → 401 with codex's text), then the upgrade. The path is not
/// checked (`/` and `/ws` both work).
private struct AppServerHTTPHandler: HTTPHandler {
    let sim: CodexAppServerSimulator
    let token: String?
    let unix: Bool

    func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
        let isUpgrade = request.headers[.upgrade]?.lowercased() == "websocket"
        if !isUpgrade, request.method == .GET, ["/healthz", "/readyz"].contains(request.path) {
            return HTTPResponse(statusCode: .ok)
        }
        if request.headers[HTTPHeader("Origin")] != nil {
            return HTTPResponse(statusCode: .forbidden)
        }
        if let token {
            let expected = token.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let supplied = Self.bearer(request.headers[.authorization]) else {
                return Self.unauthorized("missing websocket bearer token")
            }
            guard supplied == expected else { return Self.unauthorized("invalid websocket bearer token") }
        }
        guard isUpgrade else {
            return HTTPResponse(statusCode: .upgradeRequired, headers: [.contentType: "text/plain"], body: Data("Upgrade Required".utf8))
        }
        let upgrade = WebSocketHTTPHandler(handler: MessageFrameWSHandler(
            handler: AppServerSocketHandler(sim: sim), frameSize: CodexAppServerSimulator.maxUnfragmented))
        var response = try await upgrade.handleRequest(request)
        if unix, response.statusCode == .switchingProtocols {
            response.headers[HTTPHeader(CodexAppServerSimulator.maxUnfragmentedHeader)] = String(CodexAppServerSimulator.maxUnfragmented)
        }
        return response
    }

    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive), or nil.
    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    static func unauthorized(_ text: String) -> HTTPResponse {
        HTTPResponse(statusCode: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8"], body: Data(text.utf8))
    }
}

/// One WebSocket connection as a JSON-RPC session: text frames in, text frames out. Binary
/// frames are ignored (note §1).
private struct AppServerSocketHandler: WSMessageHandler {
    let sim: CodexAppServerSimulator

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let (outbound, continuation) = AsyncStream<WSMessage>.makeStream()
        let id = sim.open(.init(
            send: { text in continuation.yield(.text(text)) },
            close: {
                continuation.yield(.close(WSCloseCode(1001, reason: "server stopping")))
                continuation.finish()
            }
        ))
        let sim = sim
        Task {
            for await message in client {
                if case .text(let text) = message { sim.receive(text, from: id) }
            }
            sim.close(id)
            continuation.finish()
        }
        return outbound
    }
}
