import Foundation
import Logging

/// A faithful, in-process OpenCode server (`opencode serve`), written from the protocol notes:
/// Basic auth, `/global/event` and `/event` SSE, the session/message/permission/question REST
/// routes, and scripted turns (`OpenCodeScenario`) whose events and REST state agree.
///
/// ```swift
/// let sim = OpenCodeSimulator(options: .init(password: "secret", heartbeatInterval: .milliseconds(200)))
/// let base = try await sim.start()          // http://127.0.0.1:PORT
/// // … drive it over HTTP …
/// await sim.stop()
/// ```
public final class OpenCodeSimulator: Sendable {
    /// The notes' fixture session ("Fix the build"), seeded unless `Options.seedFixtureSession` is false.
    public static let fixtureSessionID = OpenCodeFixtures.fixtureSessionID

    public let options: Options
    let state: OpenCodeState
    /// The 2.x server's state (`Options.generation` 2); unused by 1.x.
    let state2: OpenCode2State
    let http: EmbeddedHTTPServer
    let log = RequestLog()
    let logger: Logger
    /// The Basic-auth password now in force (starts as `options.password`).
    let password: Locked<String?>
    /// The base URL once listening (what 2.x's `GET /api/info` lists in `urls`).
    let base: Locked<String>

    static func madeUpPassword() -> String {
        String((0..<24).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
    }

    /// The Basic-auth password in force (user `opencode`): for a 2.x simulator started without
    /// one, the one it made up.
    public var currentPassword: String? { password.current }

    public init(options: Options = Options(), logger: Logger? = nil) {
        let logger = logger ?? .simulatorNoOp
        self.options = options
        self.logger = logger
        let state = OpenCodeState(options: options, logger: logger)
        self.state = state
        let state2 = OpenCode2State(options: options, logger: logger)
        self.state2 = state2
        let log = self.log
        // A 2.x server always has a password: `serve` makes one up (and says it) unless given one.
        let password = Locked(options.generation == 2 ? options.password ?? Self.madeUpPassword() : options.password)
        self.password = password
        let base = Locked("")
        self.base = base
        self.http = EmbeddedHTTPServer(logger: logger) { request, streams in
            var current = options
            current.password = password.current
            if options.generation == 2 {
                return await OpenCode2Routes(options: current, state: state2, streams: streams, log: log, baseURL: base.current).handle(request)
            }
            return await OpenCodeRoutes(options: current, state: state, streams: streams, log: log).handle(request)
        }
        if options.generation == 2, options.password == nil {
            logger.notice("server password \(password.current ?? "")")
        }
    }

    /// Seeds the fixtures and starts listening; returns `http://HOST:PORT` (the real port when 0).
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) async throws -> URL {
        if let url = http.baseURL { return url }
        await state.seed()
        await state2.seed()
        let url = try await http.start(host: host, port: port)
        base.withLock { $0 = url.absoluteString }
        return url
    }

    /// Ends every stream and turn, then closes the listener.
    public func stop() async {
        await state.shutdown()
        await state2.shutdown()
        await http.stop()
    }

    /// The base URL while running.
    public var baseURL: URL? {
        http.baseURL
    }

    // MARK: Test access

    /// The server's password changes (an operator rotated `OPENCODE_SERVER_PASSWORD` and restarted
    /// it): from now on every request with the old one is refused with 401.
    public func rotatePassword(to newPassword: String) {
        password.withLock { $0 = newPassword }
    }

    /// Every request received so far (including refused ones), in arrival order.
    public func requests() async -> [RecordedRequest] {
        log.all
    }

    /// Waits until a request matching `predicate` has been received.
    public func waitForRequest(
        timeout: Duration = .seconds(5),
        where predicate: @escaping @Sendable (RecordedRequest) -> Bool
    ) async throws -> RecordedRequest {
        try await log.waitFor(timeout: timeout, predicate)
    }

    /// The status `GET /session/status` would report: "idle" when absent, else its `type` ("busy").
    public func status(ofSession sessionID: String) async -> String {
        if options.generation == 2 { return await state2.turns[sessionID] == nil ? "idle" : "busy" }
        return await state.statuses[sessionID]?["type"]?.stringValue ?? "idle"
    }

    /// Waits until the session is idle with no turn running or queued.
    public func waitUntilIdle(_ sessionID: String, timeout: Duration = .seconds(5)) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while await !(options.generation == 2 ? state2.isQuiet(sessionID) : state.isQuiet(sessionID)) {
            guard ContinuousClock.now < deadline else { throw SimulatorError.timedOut("waiting for \(sessionID) to go idle") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// IDs of pending permission requests (all sessions), oldest first.
    public func pendingPermissionIDs() async -> [String] {
        if options.generation == 2 { return await state2.permissions.compactMap { $0["id"]?.stringValue } }
        return await state.pendingPermissions.map(\.id)
    }

    /// Waits until a permission request is pending and returns its ID.
    public func waitForPendingPermission(timeout: Duration = .seconds(5)) async throws -> String {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let id = await pendingPermissionIDs().first { return id }
            guard ContinuousClock.now < deadline else { throw SimulatorError.timedOut("waiting for a permission request") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Number of SSE connections currently subscribed to events.
    public func openEventStreams() async -> Int {
        if options.generation == 2 { return await state2.openStreamCount }
        return await state.openStreamCount
    }

    /// Emits `server.instance.disposed` for `directory` (default: the server's); `/event` streams of
    /// that directory end after it, like on a config reload.
    public func disposeInstance(directory: String? = nil) async {
        await state.disposeInstance(directory ?? options.directory)
    }

    /// 2.x: `count` more sessions, as `POST /api/session` creates them (tests of long lists).
    public func createSessions2(_ count: Int) async {
        for index in 0..<count { _ = await state2.createSession(title: "Session \(index)", directory: nil, model: nil) }
    }

    /// 2.x: `turns` finished turns appended to a session's history at once (user, assistant,
    /// idle: three messages each), as if they had run (tests of long histories).
    public func appendFinishedTurns2(_ turns: Int, session: String) async {
        await state2.appendFinishedTurns(turns, session: session)
    }

    /// Cuts every open SSE connection now (mid-body), as a proxy or network switch would.
    public func dropEventStreams() async {
        if options.generation == 2 { return await state2.dropAllStreams() }
        await state.dropAllStreams()
    }
}

extension OpenCodeState {
    func isQuiet(_ sessionID: String) -> Bool {
        turns[sessionID] == nil && (queuedPrompts[sessionID] ?? []).isEmpty && statuses[sessionID] == nil
    }
}
