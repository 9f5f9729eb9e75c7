import TetherCodexProtocol
import Logging
import TetherCore
import TetherNet
import TetherStreaming

/// The `codexmonitor` backend: the CodexMonitor daemon, over raw TCP with one JSON object per
/// line (see adapters.md, CodexMonitor). Sessions are a workspace's Codex threads
/// (`WORKSPACE~THREAD`); turns and parts keep Codex's ids; approvals are Codex's server→client
/// requests, answered through the daemon. Each command opens its own connection.
public struct CodexMonitorBackend: Backend {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// The daemon's shared secret; nil for a daemon run with `--insecure-no-auth`.
        public var token: String?
        /// The workspace id (or name) this profile works in; nil: every connected workspace.
        public var workspace: String?
        public var profile: String
        /// `send_user_message`'s `accessMode`: `current` (the daemon's default: workspace-write
        /// sandbox, approvals on request), `read-only`, or `full-access` (no sandbox, no approvals).
        public var accessMode: String?
        public var connectTimeout: Duration
        /// Each call's limit (the daemon itself gives Codex 300 s).
        public var requestTimeout: Duration
        /// The longest line accepted. `resume_thread` returns a whole thread's history in one line.
        public var maxLineLength: Int
        /// A silent stream is checked with `ping` this often (the daemon never pings).
        public var keepalive: Duration
        /// How long that `ping` may take before the link is presumed dead.
        public var pingTimeout: Duration
        /// How long to listen for the pending approvals Codex re-announces after `resume_thread`.
        public var settle: Duration
        public var reconnect: ReconnectPolicy.Configuration

        public init(host: String, port: Int, token: String?, workspace: String?, profile: String, accessMode: String? = nil,
                    connectTimeout: Duration = .seconds(10), requestTimeout: Duration = .seconds(60),
                    maxLineLength: Int = 64 << 20, keepalive: Duration = .seconds(30), pingTimeout: Duration = .seconds(15),
                    settle: Duration = .milliseconds(500), reconnect: ReconnectPolicy.Configuration = .init()) {
            self.host = host
            self.port = port
            self.token = token
            self.workspace = workspace
            self.profile = profile
            self.accessMode = accessMode
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.maxLineLength = maxLineLength
            self.keepalive = keepalive
            self.pingTimeout = pingTimeout
            self.settle = settle
            self.reconnect = reconnect
        }

        /// `host:port` (`[v6]:port`).
        public var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    public let kind = BackendKind.codexMonitor
    public let capabilities: BackendCapabilities = [.sessions, .createSession, .history, .send, .events, .approvals, .abort]

    let configuration: Configuration
    let logger: Logger
    let connector: CodexMonitorClient.Connector
    /// What this process answered, so its own streams can say how an approval was resolved.
    let answers = CodexAnswerLedger()

    public init(configuration: Configuration, logger: Logger) {
        self.init(configuration: configuration, logger: logger, connector: CodexMonitorClient.tcp)
    }

    init(configuration: Configuration, logger: Logger, connector: @escaping CodexMonitorClient.Connector) {
        self.configuration = configuration
        self.logger = logger
        self.connector = connector
    }

    func open() async throws -> CodexMonitorClient {
        try await CodexMonitorClient.open(configuration, connector: connector, logger: logger)
    }

    func withClient<T: Sendable>(_ body: (CodexMonitorClient) async throws -> T) async throws -> T {
        let client = try await open()
        defer { client.close() }
        return try await body(client)
    }

    /// Runs a codex call, turning an app-server error (inside a daemon success) into a TetherError.
    func api<T>(_ doing: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CodexMonitorResult.AppServerError {
            if error.isNotFound {
                throw TetherError(.notFound, "Codex: \(error.message) (\(doing))",
                                  hint: "`tether sessions list` shows this profile's sessions")
            }
            throw TetherError(.failed, "Codex refused \(doing): \(error.description)")
        }
    }

    func parseSession(_ id: String) throws -> (workspace: String, thread: String) {
        if let parsed = CodexMonitorSessionID.parse(id) { return parsed }
        // A bare thread id is fine when the profile names its workspace.
        if let workspace = configuration.workspace, !id.contains(CompositeID.separator), !id.isEmpty { return (workspace, id) }
        throw TetherError(.usage, "\"\(id)\" is not a CodexMonitor session id (WORKSPACE~THREAD, as `tether sessions list` prints it)")
    }

    // MARK: Check

    public func check() async throws -> CheckReport {
        try await withClient { client in
            var details: JSONObject = ["auth_enabled": .bool(client.auth == .authenticated)]
            var version: String?
            do {
                let info = try await client.call("daemon_info", doing: "reading the daemon's info")
                version = info["version"]?.string
                if let name = info["name"]?.string { details["daemon"] = .string(name) }
                if let mode = info["mode"]?.string { details["mode"] = .string(mode) }
            } catch let error as TetherError where error.code == .unsupported {
                _ = try await client.call("ping", doing: "pinging the daemon")  // forked daemons lack daemon_info
            }
            let workspaces = try await client.workspaces()
            details["workspaces"] = .array(workspaces.map(\.json))
            if configuration.workspace != nil {
                let workspace = try select(configuredFrom: workspaces)
                details["workspace"] = .string(workspace.id)
            }
            return CheckReport(endpoint: configuration.endpoint, reachable: true, authenticated: client.auth == .authenticated,
                               version: version, details: details)
        }
    }

    // MARK: Workspaces

    /// The profile's workspace, by id (or name).
    func select(configuredFrom workspaces: [CodexMonitorWorkspace]) throws -> CodexMonitorWorkspace {
        let wanted = configuration.workspace ?? ""
        if let workspace = workspaces.first(where: { $0.id == wanted }) ?? workspaces.first(where: { $0.name == wanted }) {
            return workspace
        }
        let known = workspaces.isEmpty ? "none" : workspaces.map(\.summary).joined(separator: "; ")
        throw TetherError(.configuration, "profile \(configuration.profile) names workspace \"\(wanted)\", which the CodexMonitor daemon at \(configuration.endpoint) does not have",
                          hint: "set profiles.\(configuration.profile).workspace to one of: \(known)")
    }

    /// The workspaces this profile watches: its own (connected now if it was not), or every
    /// connected one (Tether does not start Codex in workspaces nobody asked for).
    func watchedWorkspaces(_ client: CodexMonitorClient) async throws -> [CodexMonitorWorkspace] {
        let workspaces = try await client.workspaces()
        guard configuration.workspace != nil else { return workspaces.filter(\.connected) }
        var workspace = try select(configuredFrom: workspaces)
        try await client.connectWorkspace(workspace.id)
        workspace.connected = true
        return [workspace]
    }

    // MARK: Sessions

    public func listSessions(_ request: SessionListRequest) async throws -> [Session] {
        try await withClient { client in
            let workspaces = try await watchedWorkspaces(client)
            if workspaces.isEmpty {
                logger.info("no CodexMonitor workspace is connected; set profiles.\(configuration.profile).workspace to list one's threads")
            }
            var sessions: [Session] = []
            for workspace in workspaces {
                let threads = try await api("listing the threads of workspace \(workspace.id)") { try await client.threads(in: workspace) }
                sessions += threads.compactMap { CodexThread.session(scope: workspace.id, thread: $0) }
            }
            return sessions.sorted { ($0.updatedAt ?? 0) > ($1.updatedAt ?? 0) }
        }
    }

    public func createSession(_ request: SessionCreateRequest) async throws -> Session {
        try await withClient { client in
            let workspaces = try await client.workspaces()
            let workspace: CodexMonitorWorkspace
            let known = workspaces.map(\.summary).joined(separator: "; ")
            if let directory = request.directory {
                let path = CodexMonitorThread.normalize(directory)
                guard let match = workspaces.first(where: { CodexMonitorThread.normalize($0.path) == path }) else {
                    throw TetherError(.notFound, "no CodexMonitor workspace has the directory \(directory)",
                                      hint: "add it in CodexMonitor first; workspaces: \(known.isEmpty ? "none" : known)")
                }
                workspace = match
            } else if configuration.workspace != nil {
                workspace = try select(configuredFrom: workspaces)
            } else if workspaces.count == 1 {
                workspace = workspaces[0]
            } else {
                throw TetherError(.usage, "which CodexMonitor workspace should the session be in?",
                                  hint: "pass --directory PATH or set profiles.\(configuration.profile).workspace; workspaces: \(known.isEmpty ? "none" : known)")
            }
            try await client.connectWorkspace(workspace.id)
            let started = try await api("starting a thread in workspace \(workspace.id)") {
                try await client.codex("start_thread", ["workspaceId": .string(workspace.id)], doing: "starting a thread")
            }
            guard var session = CodexThread.session(scope: workspace.id, thread: started["thread"] ?? .null) else {
                throw TetherError(.badData, "CodexMonitor started a thread but its answer has no thread id: \(started.serialized.prefix(200))")
            }
            if let title = request.title, let thread = CodexMonitorSessionID.parse(session.id)?.thread {
                do {
                    _ = try await api("naming thread \(thread)") {
                        try await client.codex("set_thread_name", ["workspaceId": .string(workspace.id), "threadId": .string(thread),
                                                                   "name": .string(title)], doing: "naming the thread")
                    }
                    session.title = title
                } catch let error as TetherError {
                    logger.warning("the thread was created but could not be named", metadata: ["error": "\(error.message)"])
                }
            }
            return session
        }
    }

    public func session(id: String) async throws -> Session {
        let (workspace, thread) = try parseSession(id)
        return try await withClient { client in
            try await client.connectWorkspace(workspace)
            let params: JSONObject = ["workspaceId": .string(workspace), "threadId": .string(thread)]
            let result: JSONValue
            do {
                result = try await api("reading thread \(thread)") { try await client.codex("read_thread", params, doing: "reading the thread") }
            } catch let error as TetherError where error.code == .unsupported {
                // Forked daemons have no read_thread.
                result = try await api("reading thread \(thread)") { try await client.codex("resume_thread", params, doing: "reading the thread") }
            }
            guard let session = CodexThread.session(scope: workspace, thread: result["thread"] ?? .null) else {
                throw TetherError(.notFound, "Codex has no thread \(thread) in workspace \(workspace)",
                                  hint: "`tether sessions list` shows this profile's sessions")
            }
            return session
        }
    }

    /// `resume_thread`: the thread with its turns (and, on current Codex, its pending approvals
    /// re-announced as events).
    func resume(_ client: CodexMonitorClient, workspace: String, thread: String) async throws -> JSONValue {
        try await client.connectWorkspace(workspace)
        let result = try await api("reading thread \(thread)") {
            try await client.codex("resume_thread", ["workspaceId": .string(workspace), "threadId": .string(thread)],
                                   doing: "reading thread \(thread)")
        }
        guard let object = result["thread"], object["id"] != nil else {
            throw TetherError(.badData, "CodexMonitor's resume_thread answer has no thread: \(result.serialized.prefix(200))")
        }
        return object
    }

    public func history(session: String, limit: Int?) async throws -> [Event] {
        let (workspace, thread) = try parseSession(session)
        return try await withClient { client in
            CodexAppServerMapper.history(scope: workspace, thread: try await resume(client, workspace: workspace, thread: thread),
                                            limit: limit)
        }
    }

    // MARK: Turns

    public func send(_ request: SendRequest) async throws -> SendReceipt {
        try await withClient { client in try await send(request, using: client) }
    }

    func send(_ request: SendRequest, using client: CodexMonitorClient) async throws -> SendReceipt {
        let (workspace, thread) = try parseSession(request.session)
        try await client.connectWorkspace(workspace)
        var params: JSONObject = ["workspaceId": .string(workspace), "threadId": .string(thread), "text": .string(request.text)]
        if let model = request.model { params["model"] = .string(model) }
        if let accessMode = configuration.accessMode { params["accessMode"] = .string(accessMode) }
        let doing = "starting a turn in thread \(thread)"
        let result: JSONValue
        do {
            result = try await client.codex("send_user_message", params, doing: doing)
        } catch let error as CodexMonitorResult.AppServerError {
            // turn/start fails on a thread Codex has not loaded (after a restart) until it is resumed.
            logger.debug("send_user_message failed; resuming the thread and retrying once", metadata: ["error": "\(error.message)"])
            _ = try await resume(client, workspace: workspace, thread: thread)
            result = try await api(doing) { try await client.codex("send_user_message", params, doing: doing) }
        }
        let turn = result["turn"]?["id"]?.string
        return SendReceipt(session: request.session, turn: turn, data: .compact(["status": JSONValue(result["turn"]?["status"]?.string)]))
    }

    public func sendAndFollow(_ request: SendRequest) -> EventStream {
        CodexMonitorEventStream(backend: self, request: EventsRequest(session: request.session, follow: true, untilTurnCompletes: true, raw: request.raw),
                                sendOnReady: request).run()
    }

    public func events(_ request: EventsRequest) -> EventStream {
        CodexMonitorEventStream(backend: self, request: request, sendOnReady: nil).run()
    }

    public func abort(session: String, turn: String?) async throws {
        let (workspace, thread) = try parseSession(session)
        try await withClient { client in
            var turnID = turn
            if turnID == nil {
                let object = try await resume(client, workspace: workspace, thread: thread)
                turnID = CodexThread.runningTurns(object).last
            }
            guard let turnID else {
                throw TetherError(.failed, "thread \(thread) has no running turn to abort",
                                  hint: "`tether events --session \(session)` shows its turns")
            }
            try await client.connectWorkspace(workspace)
            _ = try await api("interrupting turn \(turnID)") {
                try await client.codex("turn_interrupt", ["workspaceId": .string(workspace), "threadId": .string(thread),
                                                          "turnId": .string(turnID)], doing: "interrupting turn \(turnID)")
            }
        }
    }

    // MARK: Approvals

    public func pendingApprovals(session: String?) async throws -> [Approval] {
        let only = try session.map(parseSession)
        let sessionID = only.map { CodexMonitorSessionID.make(workspace: $0.workspace, thread: $0.thread) }
        return try await withClient { client in
            var mapper = CodexAppServerMapper()
            var threads: [(workspace: String, thread: String)] = []
            if let only {
                threads = [only]
            } else {
                for workspace in try await watchedWorkspaces(client) {
                    let listed = try await api("listing the threads of workspace \(workspace.id)") { try await client.threads(in: workspace) }
                    threads += listed.filter(CodexThread.isActive).compactMap { $0["id"]?.string }.map { (workspace.id, $0) }
                }
            }
            // Codex re-announces a thread's pending requests when it is resumed; nothing else lists them.
            for (workspace, thread) in threads {
                _ = mapper.reconcile(scope: workspace, thread: try await resume(client, workspace: workspace, thread: thread))
            }
            for notification in try await CodexMonitorEventStream.settle(client, quiet: configuration.settle) {
                _ = mapper.map(method: notification.method, params: notification.params)
            }
            return mapper.approvals(session: sessionID)
        }
    }

    public func approve(id: String, answer: ApprovalAnswer) async throws -> Event {
        guard let approval = CodexApprovalID(monitorID: id) else {
            throw TetherError(.usage, "\"\(id)\" is not a CodexMonitor approval id (WORKSPACE~THREAD~REQUEST~KIND~TURN~ITEM, as approval.requested prints it)")
        }
        let result = try CodexDecision.result(for: answer, kind: approval.kind)
        return try await withClient { client in
            do {
                try await requireRunningTurn(for: approval, id: id, client: client)
                // Recorded before sending: this process's stream may see `serverRequest/resolved`
                // before the daemon's answer arrives here. Forgotten if it was not sent.
                answers.record(answer.decision, for: id)
                do {
                    // requestId keeps the JSON type it arrived with; the daemon relays it verbatim.
                    _ = try await client.call("respond_to_server_request",
                                              ["workspaceId": .string(approval.workspace), "requestId": approval.request, "result": result],
                                              doing: "answering approval \(id)")
                } catch {
                    answers.forget(id)
                    throw error
                }
            } catch let error as TetherError where error.code == .failed && error.message.contains("not connected") {
                throw TetherError(.notFound, "approval \(id) is no longer pending: workspace \(approval.workspace) is not connected (the daemon or Codex restarted)",
                                  hint: "`tether approvals` lists what is pending")
            }
            return .approvalResolved(id: id, session: approval.session, turn: approval.turn, decision: answer.decision.rawValue)
        }
    }

    /// Refuses to answer a request that cannot be waiting any more. The daemon relays an answer to
    /// whatever request now has that id, and app-server numbers its requests from 0 again when it
    /// restarts: an approval left over from before would answer a new request nobody has seen.
    /// `resume_thread` (the workspace is not connected for it: answering never starts Codex)
    /// says whether the thread is running a turn and which; see `CodexThread.whyNotWaiting`.
    /// A daemon without `resume_thread` is answered as before.
    private func requireRunningTurn(for approval: CodexApprovalID, id: String, client: CodexMonitorClient) async throws {
        let thread: JSONValue
        do {
            thread = try await client.codex("resume_thread", ["workspaceId": .string(approval.workspace), "threadId": .string(approval.thread)],
                                            doing: "reading thread \(approval.thread)")["thread"] ?? .null
        } catch let error as CodexMonitorResult.AppServerError {
            throw TetherError(.notFound, "approval \(id) is no longer pending: Codex cannot read thread \(approval.thread) (\(error.message))",
                              hint: "`tether approvals` lists what is pending")
        } catch let error as TetherError where error.code == .unsupported {
            logger.debug("the daemon has no resume_thread; answering without checking the turn", metadata: ["approval": "\(id)"])
            return
        }
        if let reason = CodexThread.whyNotWaiting(thread, turn: approval.turn) {
            throw TetherError(.notFound, "approval \(id) is no longer pending: \(reason)",
                              hint: "Codex may have restarted since it asked; `tether approvals` lists what is pending")
        }
    }
}
