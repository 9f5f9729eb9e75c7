import FlyingSocks
import Foundation
import Logging

/// A faithful stand-in for CodexMonitor's `codex-monitor-daemon` and the `codex app-server` behind
/// it, written from `protocols/codexmonitor.md`: raw TCP, one JSON object per line, the `auth`
/// handshake, raw-wrapped codex results, and scripted turns relayed as `app-server-event`s.
///
/// Turns are scripted by the prompt text; see `CodexMonitorScenario.forPrompt(_:)`.
public final class CodexMonitorSimulator: Sendable {
    /// The module's insertion-ordered JSON value, under a short name for this simulator's code.
    typealias JSON = OrderedJSON

    let options: Options
    let logger: Logger
    let world: World
    let broadcast = Broadcast()
    let relay: CodexMonitorRelay?

    private struct Running: Sendable {
        var listener: AsyncSocket
        var poolTask: Task<Void, Never>
        var acceptTask: Task<Void, Never>
        var host: String
        var port: Int
    }

    /// The daemon's token now in force (starts as `options.token`).
    private let token: Locked<String?>
    private let running = Locked<Running?>(nil)
    private let connectionTasks = Locked<[Int: Task<Void, Never>]>([:])
    private let acceptedCount = Locked(0)
    private let received = Locked<[ReceivedRequest]>([])
    private let appServerLog = Locked<[AppServerInput]>([])
    /// `Options.flood`, rendered at `start`.
    private let floodChunks = Locked<[[UInt8]]?>(nil)

    public init(options: Options = Options(), logger: Logger? = nil) {
        self.options = options
        self.logger = logger ?? .simulatorNoOp
        token = Locked(options.token)
        let world = World(options: options)
        self.world = world
        relay = options.relay.map { [broadcast] in
            CodexMonitorRelay(options: $0, world: world, broadcast: broadcast, logger: logger ?? .simulatorNoOp)
        }
    }

    // MARK: - Observing (for tests)

    /// Every request line parsed so far, in arrival order (including rejected ones).
    /// The daemon restarts with a new `--token`: connections made from now on need the new one.
    public func rotateToken(to newToken: String) { token.withLock { $0 = newToken } }

    /// Codex's app-server dies (the daemon keeps running): running turns stop without a word,
    /// workspaces must be connected again (which spawns a new app-server, `codex/connected`),
    /// and the new process numbers its requests from 0 again.
    public func restartAppServer() {
        for task in world.restartAppServer() { task.cancel() }
    }

    public var receivedRequests: [ReceivedRequest] {
        received.current
    }

    /// What the daemon wrote to app-server's stdin, in order.
    public var appServerInputs: [AppServerInput] {
        appServerLog.current
    }

    /// Where the simulator listens, once started.
    public var endpoint: (host: String, port: Int)? {
        running.current.map { ($0.host, $0.port) }
    }

    /// Connections accepted so far.
    public var acceptedConnections: Int {
        acceptedCount.current
    }

    /// Connections currently open.
    public var openConnections: Int {
        broadcast.all.count
    }

    func log(_ input: JSON, workspaceID: String) {
        appServerLog.withLock { $0.append(AppServerInput(workspaceID: workspaceID, message: input.serialized)) }
    }

    // MARK: - Lifecycle

    /// Binds and starts accepting; returns the bound address (the real port when `port` is 0).
    @discardableResult
    public func start(host: String = "127.0.0.1", port: Int = 0) async throws -> (host: String, port: Int) {
        if let endpoint { return endpoint }
        let bindHost = host == "localhost" ? "127.0.0.1" : host
        if let count = options.flood, floodChunks.current == nil {
            let chunks = Flood.render(count: count, shape: options.floodShape,
                                      workspaceID: options.workspaces.first?.id ?? "ws-1", codex: options.codex)
            floodChunks.withLock { $0 = chunks }
        }
        guard let port16 = UInt16(exactly: port) else {
            throw SimulatorError.cannotListen("\(port) is not a TCP port")
        }
        let address: any SocketAddress
        do {
            if bindHost.contains(":") {
                address = try sockaddr_in6.inet6(ip6: bindHost, port: port16)
            } else {
                address = try sockaddr_in.inet(ip4: bindHost, port: port16)
            }
        } catch {
            throw SimulatorError.cannotListen("\(host) is not a numeric IP address (\(error))")
        }

        let pool: any AsyncSocketPool = SocketPool.make(logger: FlyingFoxLogBridge(logger: logger))
        let listener: AsyncSocket
        let boundPort: Int
        do {
            try await pool.prepare()
            let socket = try Socket(domain: Int32(type(of: address).family), type: .stream)
            try socket.setValue(true, for: .localAddressReuse)
            try socket.bind(to: address)
            try socket.listen()
            switch try socket.sockname() {
            case .ip4(_, let port), .ip6(_, let port): boundPort = Int(port)
            case .unix: boundPort = port
            }
            listener = try AsyncSocket(socket: socket, pool: pool)
        } catch {
            throw SimulatorError.cannotListen("\(host):\(port): \(error)")
        }

        let poolTask = Task {
            do { try await pool.run() } catch {}
        }
        let acceptTask = Task { [self] in
            do {
                for try await client in listener.sockets {
                    accept(client)
                }
            } catch {
                logger.trace("codexmonitor sim accept loop ended", metadata: ["error": "\(error)"])
            }
        }
        running.withLock {
            $0 = Running(listener: listener, poolTask: poolTask, acceptTask: acceptTask, host: bindHost, port: boundPort)
        }
        logger.debug("codexmonitor sim listening", metadata: ["address": "\(bindHost):\(boundPort)"])
        return (bindHost, boundPort)
    }

    /// Closes the listener and every connection, ends running turns, and waits for all of it.
    public func stop() async {
        guard let state = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        state.acceptTask.cancel()
        await state.acceptTask.value
        try? state.listener.close()
        // Turns first, so no request handler is left waiting on one.
        let turns = world.runningTasks()
        for task in turns { task.cancel() }
        for connection in broadcast.all {
            connection.close()
        }
        for task in connectionTasks.withLock({ Array($0.values) }) {
            await task.value
        }
        for task in turns { await task.value }
        state.poolTask.cancel()
        await state.poolTask.value
        relay?.shutdown()
    }

    private func accept(_ socket: AsyncSocket) {
        let index = acceptedCount.withLock { count in
            count += 1
            return count
        }
        var current = options
        current.token = token.current
        let connection = Connection(index: index, socket: socket, options: current, broadcast: broadcast, logger: logger)
        broadcast.add(connection)
        logger.debug("codexmonitor sim connection opened", metadata: ["connection": "\(index)"])
        let task = Task { [self] in
            await connection.run { requests in
                await self.handle(requests, on: connection)
            }
            broadcast.remove(connection)
            logger.debug("codexmonitor sim connection closed", metadata: ["connection": "\(index)"])
        }
        connectionTasks.withLock { $0[index] = task }
        if connection.isAuthenticated { startFlood(on: connection) }
    }

    /// `Options.flood`: an authenticated connection gets its flood.
    private func startFlood(on connection: Connection) {
        guard let chunks = floodChunks.current else { return }
        connection.startFlood(chunks, close: options.floodClose)
    }

    // MARK: - Requests

    /// The requests of one read: auth is checked line by line; authorised requests run one at a
    /// time, or (reordered mode) all together with their responses sent in reverse order.
    private func handle(_ requests: [Wire.Request], on connection: Connection) async {
        var batch: [Wire.Request] = []
        for request in requests {
            received.withLock {
                $0.append(ReceivedRequest(
                    connection: connection.index, id: request.id?.serialized, method: request.method,
                    params: request.params.serialized
                ))
            }
            logger.trace("codexmonitor sim request", metadata: ["connection": "\(connection.index)", "method": "\(request.method)"])
            guard connection.isAuthenticated else {
                if request.method == "auth" {
                    authenticate(request, on: connection)
                } else if let id = request.responseID {
                    connection.send(Wire.error(id: id, "unauthorized"))
                }
                continue
            }
            if options.reorderResponses {
                batch.append(request)
            } else {
                let reply = await dispatch(request)
                respond(reply, to: request, on: connection)
                await reply.afterResponse?()
            }
        }
        guard !batch.isEmpty else { return }
        let replies = await withTaskGroup(of: (Int, Reply).self) { group in
            for (position, request) in batch.enumerated() {
                group.addTask { (position, await self.dispatch(request)) }
            }
            var replies: [(Int, Reply)] = []
            for await reply in group { replies.append(reply) }
            return replies.sorted { $0.0 < $1.0 }.map(\.1)
        }
        for (request, reply) in zip(batch, replies).reversed() {
            respond(reply, to: request, on: connection)
        }
        for reply in replies {
            await reply.afterResponse?()
        }
    }

    private func respond(_ reply: Reply, to request: Wire.Request, on connection: Connection) {
        guard let id = request.responseID else { return }
        switch reply.body {
        case .result(let result): connection.send(Wire.result(id: id, result))
        case .error(let message): connection.send(Wire.error(id: id, message))
        }
    }

    /// `auth` before authentication: `{token}` or a bare string, compared with `!=` (§1.3).
    private func authenticate(_ request: Wire.Request, on connection: Connection) {
        let supplied = request.params.stringValue ?? request.params["token"]?.stringValue
        let expected = token.current?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let supplied, supplied == expected {
            connection.completeAuth(response: request.responseID.map { Wire.result(id: $0, ["ok": true]) })
            startFlood(on: connection)
        } else if let id = request.responseID {
            connection.send(Wire.error(id: id, "invalid token"))
        }
    }
}
