import TetherCodexProtocol
import Logging
import Synchronization
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// One authenticated connection to the CodexMonitor daemon: the RPC layer plus the daemon's
/// conventions — the auth handshake, raw app-server results, workspaces that must be connected
/// before codex methods — and its error strings turned into `TetherError`s naming the profile.
final class CodexMonitorClient: Sendable {
    /// Opens the line connection (TCP in production, in memory in tests).
    typealias Connector = @Sendable (_ configuration: CodexMonitorBackend.Configuration, _ logger: Logger) async throws -> any LineConnection

    static let tcp: Connector = { configuration, logger in
        try await TCPLineConnection.connect(host: configuration.host, port: configuration.port,
                                            timeout: configuration.connectTimeout,
                                            maxLineLength: configuration.maxLineLength, logger: logger)
    }

    let rpc: CodexMonitorRPC
    let configuration: CodexMonitorBackend.Configuration
    /// What the handshake found: `.authenticated` (token accepted) or `.open` (no auth).
    let auth: CodexMonitorAuth.Outcome
    private let connectedWorkspaces = Mutex<Set<String>>([])

    private init(rpc: CodexMonitorRPC, configuration: CodexMonitorBackend.Configuration, auth: CodexMonitorAuth.Outcome) {
        self.rpc = rpc
        self.configuration = configuration
        self.auth = auth
    }

    /// Connects and authenticates (exit 77 when the daemon refuses).
    static func open(_ configuration: CodexMonitorBackend.Configuration, connector: Connector, logger: Logger) async throws -> CodexMonitorClient {
        let connection: any LineConnection
        do {
            connection = try await connector(configuration, logger)
        } catch let error as NetError {
            throw error.tetherError(service: "CodexMonitor (profile \(configuration.profile))")
        }
        let rpc = CodexMonitorRPC(connection: connection, logger: logger)
        rpc.start()
        let request = CodexMonitorAuth.request(token: configuration.token)
        let answer: Result<JSONValue, CodexMonitorRPC.RemoteError>
        do {
            answer = .success(try await rpc.call(request.method, params: request.params, timeout: configuration.requestTimeout))
        } catch {
            guard case .remote(let remote) = error else {
                rpc.close()
                throw Self.tetherError(error, method: request.method, doing: "authenticating", configuration: configuration)
            }
            answer = .failure(remote)
        }
        let outcome = CodexMonitorAuth.outcome(token: configuration.token, answer: answer)
        if let error = CodexMonitorAuth.error(for: outcome, endpoint: configuration.endpoint, profile: configuration.profile) {
            rpc.close()
            throw error
        }
        logger.debug("CodexMonitor connected", metadata: ["endpoint": "\(configuration.endpoint)", "auth": "\(outcome)"])
        return CodexMonitorClient(rpc: rpc, configuration: configuration, auth: outcome)
    }

    func close() { rpc.close() }

    // MARK: Calls

    /// A daemon method; its `result` as sent.
    func call(_ method: String, _ params: JSONObject? = nil, doing: String, timeout: Duration? = nil) async throws -> JSONValue {
        do {
            return try await rpc.call(method, params: params.map { .object($0) }, timeout: timeout ?? configuration.requestTimeout)
        } catch {
            throw Self.tetherError(error, method: method, doing: doing, configuration: configuration)
        }
    }

    /// A codex method, whose result is the app-server's raw response: unwrapped, and its
    /// `error` thrown as `CodexMonitorResult.AppServerError` (see `CodexMonitorBackend.api`).
    func codex(_ method: String, _ params: JSONObject, doing: String) async throws -> JSONValue {
        try CodexMonitorResult.unwrap(try await call(method, params, doing: doing)).get()
    }

    // MARK: Workspaces

    func workspaces() async throws -> [CodexMonitorWorkspace] {
        let result = try await call("list_workspaces", doing: "listing workspaces")
        guard let list = result.array else {
            throw TetherError(.badData, "CodexMonitor's list_workspaces answer is not a list: \(result.serialized.prefix(200))")
        }
        let workspaces = list.compactMap(CodexMonitorWorkspace.init)
        connectedWorkspaces.withLock { $0.formUnion(workspaces.filter(\.connected).map(\.id)) }
        return workspaces
    }

    /// `connect_workspace {id}` (note: `id`, not `workspaceId`), once per connection: codex
    /// methods fail with `workspace not connected` before it. It may start Codex's app-server.
    func connectWorkspace(_ id: String) async throws {
        guard !connectedWorkspaces.withLock({ $0.contains(id) }) else { return }
        _ = try await call("connect_workspace", ["id": .string(id)], doing: "connecting workspace \(id)")
        connectedWorkspaces.withLock { _ = $0.insert(id) }
    }

    /// The workspace's threads: `list_threads` (every page, up to `maxPages`), keeping those whose
    /// `cwd` is the workspace's path, as the desktop does (the list is not filtered server-side).
    func threads(in workspace: CodexMonitorWorkspace, maxPages: Int = 20) async throws -> [JSONValue] {
        try await connectWorkspace(workspace.id)
        var threads: [JSONValue] = []
        var cursor: JSONValue?
        for _ in 0..<maxPages {
            var params: JSONObject = ["workspaceId": .string(workspace.id), "limit": 100]
            if let cursor { params["cursor"] = cursor }
            let page = try await codex("list_threads", params, doing: "listing the threads of workspace \(workspace.id)")
            threads += (page["data"]?.array ?? page.array ?? []).filter { CodexMonitorThread.belongs($0, toPath: workspace.path) }
            guard let next = page["nextCursor"], !next.isNull, next != cursor else { break }
            cursor = next
        }
        return threads
    }

    // MARK: Errors

    static func tetherError(_ failure: CodexMonitorRPC.Failure, method: String, doing: String,
                            configuration: CodexMonitorBackend.Configuration) -> TetherError {
        let endpoint = configuration.endpoint
        let profile = configuration.profile
        switch failure {
        case .timedOut(_, let after):
            return TetherError(.timeout, "CodexMonitor at \(endpoint) did not answer \(method) within \(after) (\(doing))",
                               hint: "the daemon or Codex may be stuck; `tether check -p \(profile)` tests the connection", retryable: true)
        case .closed(let error?):
            return error.tetherError(service: "CodexMonitor (profile \(profile))")
        case .closed(nil):
            return TetherError(.unavailable, "CodexMonitor at \(endpoint) closed the connection while \(doing)", retryable: true)
        case .remote(let remote):
            let message = remote.message
            switch message {
            case "unauthorized", "invalid token":
                return TetherError(.authentication, "CodexMonitor at \(endpoint) refused \(method) for profile \(profile) (\(message))",
                                   hint: "check profiles.\(profile).token")
            case "workspace not found":
                return TetherError(.notFound, "CodexMonitor at \(endpoint) has no such workspace (\(doing))",
                                   hint: "`tether check -p \(profile)` lists the daemon's workspaces; check profiles.\(profile).workspace and the session id")
            case "workspace not connected":
                return TetherError(.failed, "CodexMonitor's workspace is not connected (\(doing)): its Codex session is gone",
                                   hint: "the daemon or Codex restarted; what was pending there is lost")
            case _ where remote.isUnknownMethod:
                return TetherError(.unsupported, "the CodexMonitor daemon at \(endpoint) does not know \(method) (\(doing)): an older or forked daemon",
                                   hint: "update CodexMonitor on that machine")
            case _ where message.hasPrefix("request timed out"):
                return TetherError(.timeout, "Codex did not answer in time (\(doing)): \(message)", retryable: true)
            case "request canceled":
                return TetherError(.unavailable, "Codex's app-server went away (\(doing))", hint: "retry; the daemon restarts it", retryable: true)
            case _ where message.hasPrefix("Codex CLI not found") || message.contains("did not respond to initialize"):
                return TetherError(.unavailable, "CodexMonitor cannot start Codex (\(doing)): \(message)",
                                   hint: "install or fix the codex CLI on the daemon's machine (codex_bin in its settings.json)")
            default:
                return TetherError(.failed, "CodexMonitor could not complete \(doing): \(message)")
            }
        }
    }
}
