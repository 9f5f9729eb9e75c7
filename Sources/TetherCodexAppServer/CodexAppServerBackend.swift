import Logging
import TetherCodexProtocol
import TetherCore
import TetherNet
import TetherStreaming

/// The `codex` backend: Codex's own app-server (`codex app-server`), JSON-RPC over a `ws://`
/// listener, the app-server daemon's unix socket, or a stdio child (see adapters.md, Codex
/// app-server). Sessions are Codex threads (their ids as they are); turns and parts keep
/// Codex's ids; approvals are Codex's server→client requests, answered on the connection. All
/// the commands of one process share one connection (``CodexAppServerHub``).
public struct CodexAppServerBackend: Backend {
    public struct Configuration: Sendable {
        public enum Reach: Sendable {
            /// `codex app-server --listen ws://…`, with its capability token if it takes one.
            case webSocket(url: String, token: String?)
            /// The app-server daemon's control socket.
            case daemon(socket: String)
            /// A child speaking over stdio: `codex app-server`.
            case command([String])
            /// A stdio app-server whose stdin and stdout are a TCP connection (a command run on
            /// an SSH exec channel, behind the tunnel's loopback port): a new process per connection.
            case remoteStdio(host: String, port: Int)
        }

        public var reach: Reach
        public var profile: String
        /// Where new threads start (`thread/start`'s `cwd`), when `sessions create` names none.
        public var directory: String?
        /// The process serves the profile for good (`tether serve`): a stdio child may hold
        /// turns and approvals across commands. A one-shot CLI command cannot leave any behind.
        public var longLived: Bool
        public var connectTimeout: Duration
        public var requestTimeout: Duration
        /// WebSocket pings after this much silence (the app-server sends none); twice it without
        /// a byte fails the link.
        public var keepalive: Duration
        /// The largest message accepted (`thread/resume` carries a thread's whole history).
        public var maxMessageSize: Int
        /// How long to wait for the pending requests Codex sends again after `thread/resume`.
        public var settle: Duration
        public var reconnect: ReconnectPolicy.Configuration
        public var clientVersion: String
        /// How the endpoint reads in messages, when the reach alone would mislead (a tunnel's
        /// loopback port stands for a daemon or a command on another machine).
        public var label: String?

        public init(reach: Reach, profile: String, directory: String? = nil, longLived: Bool = false,
                    connectTimeout: Duration = .seconds(10), requestTimeout: Duration = .seconds(60), keepalive: Duration = .seconds(30),
                    maxMessageSize: Int = 64 << 20, settle: Duration = .milliseconds(500),
                    reconnect: ReconnectPolicy.Configuration = .init(), clientVersion: String = "0") {
            self.reach = reach
            self.profile = profile
            self.directory = directory
            self.longLived = longLived
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.keepalive = keepalive
            self.maxMessageSize = maxMessageSize
            self.settle = settle
            self.reconnect = reconnect
            self.clientVersion = clientVersion
        }

        public var endpoint: String {
            if let label { return label }
            switch reach {
            case .webSocket(let url, _): return url
            case .daemon(let socket): return "daemon at \(socket)"
            case .command(let arguments): return "stdio: " + arguments.joined(separator: " ")
            case .remoteStdio(let host, let port): return "stdio over \(host):\(port)"
            }
        }

        /// Every connection is a new app-server process, which dies with it.
        var isStdio: Bool {
            switch reach {
            case .command, .remoteStdio: return true
            case .webSocket, .daemon: return false
            }
        }
    }

    public let kind = BackendKind.codex
    public let capabilities: BackendCapabilities = [.sessions, .createSession, .history, .send, .events, .approvals, .abort, .questions]

    let configuration: Configuration
    let logger: Logger
    let hub: CodexAppServerHub
    /// What this process answered, so its own streams can say how an approval was resolved.
    let answers = CodexAnswerLedger()

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        hub = CodexAppServerHub(configuration: configuration, logger: logger)
    }

    /// Ends the shared connection (a stdio child exits).
    public func shutdown() async { await hub.close() }

    func client() async throws -> CodexAppServerClient { try await hub.connection().client }

    /// Refuses what cannot outlive a one-shot command on a stdio profile: the child is the
    /// app-server, and it exits with this process.
    func requireLongLived(_ what: String) throws {
        guard configuration.isStdio, !configuration.longLived else { return }
        throw TetherError(.unsupported, "\(what) cannot work on stdio profile \(configuration.profile): its app-server is a child of this tether process and exits with it, taking its turns and approvals along",
                          hint: "serve the profile with `tether serve` (the child then lives as long as the gateway) and use the gateway's page or API, or use `tether send --follow`; a ws:// or daemon profile works from any process")
    }

    // MARK: Check

    public func check() async throws -> CheckReport {
        let client = try await client()
        let loaded = try await client.call("thread/loaded/list", [:], doing: "listing the loaded threads")
        return CheckReport(endpoint: configuration.endpoint, reachable: true, authenticated: true, version: client.serverVersion,
                           details: .compact(["user_agent": JSONValue(client.userAgent),
                                              "loaded_threads": .int(Int64(loaded["data"]?.array?.count ?? 0))]))
    }

    // MARK: Sessions

    public func listSessions(_ request: SessionListRequest) async throws -> [Session] {
        let client = try await client()
        var sessions = try await threads(client, archived: false).compactMap { CodexThread.session(scope: nil, thread: $0) }
        if request.includeArchived {
            sessions += try await threads(client, archived: true).compactMap { thread in
                CodexThread.session(scope: nil, thread: thread).map { session in
                    var session = session
                    session.archived = true
                    return session
                }
            }
        }
        return sessions.sorted { ($0.updatedAt ?? 0) > ($1.updatedAt ?? 0) }
    }

    /// `thread/list`, every page (at most 20).
    func threads(_ client: CodexAppServerClient, archived: Bool) async throws -> [JSONValue] {
        var threads: [JSONValue] = []
        var cursor: String?
        for _ in 0..<20 {
            var params: JSONObject = ["limit": 100]
            if archived { params["archived"] = true }
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await client.call("thread/list", params, doing: "listing threads")
            threads += page["data"]?.array ?? []
            guard let next = page["nextCursor"]?.string, !next.isEmpty else { break }
            cursor = next
        }
        return threads
    }

    /// The threads Codex says are running a turn, and those loaded in this app-server.
    func activeThreads(_ client: CodexAppServerClient) async throws -> [String] {
        let listed = try await threads(client, archived: false).filter(CodexThread.isActive).compactMap { $0["id"]?.string }
        let loaded = (try await client.call("thread/loaded/list", [:], doing: "listing the loaded threads"))["data"]?.array?
            .compactMap(\.string) ?? []
        return listed + loaded.filter { !listed.contains($0) }
    }

    public func createSession(_ request: SessionCreateRequest) async throws -> Session {
        // Codex writes a thread down only with its first turn: one made here would die with the child.
        try requireLongLived("`tether sessions create`")
        let client = try await client()
        var params: JSONObject = [:]
        if let directory = request.directory ?? configuration.directory { params["cwd"] = .string(directory) }
        let started = try await client.call("thread/start", params, doing: "starting a thread")
        guard var session = CodexThread.session(scope: nil, thread: started["thread"] ?? .null) else {
            throw TetherError(.badData, "Codex started a thread but its answer has no thread id: \(started.serialized.prefix(200))")
        }
        if let title = request.title {
            do {
                _ = try await client.call("thread/name/set", ["threadId": .string(session.id), "name": .string(title)], doing: "naming the thread")
                session.title = title
            } catch let error as TetherError {
                logger.warning("the thread was created but could not be named", metadata: ["error": "\(error.message)"])
            }
        }
        return session
    }

    public func session(id: String) async throws -> Session {
        let thread = try threadID(id)
        let result = try await client().call("thread/read", ["threadId": .string(thread)], doing: "reading thread \(thread)")
        guard let session = CodexThread.session(scope: nil, thread: result["thread"] ?? .null) else {
            throw TetherError(.notFound, "Codex has no thread \(thread)", hint: "`tether sessions list` shows this profile's sessions")
        }
        return session
    }

    func threadID(_ id: String) throws -> String {
        guard !id.isEmpty, !id.contains(CompositeID.separator) else {
            throw TetherError(.usage, "\"\(id)\" is not a Codex thread id (as `tether sessions list` prints it)")
        }
        return id
    }

    /// `thread/resume` with the thread's turns: subscribes this connection to the thread, and
    /// makes Codex send its pending requests again.
    func resume(_ client: CodexAppServerClient, thread: String) async throws -> JSONValue {
        let result = try await client.call("thread/resume", ["threadId": .string(thread)], doing: "resuming thread \(thread)")
        guard let object = result["thread"], object["id"] != nil else {
            throw TetherError(.badData, "Codex's thread/resume answer has no thread: \(result.serialized.prefix(200))")
        }
        return object
    }

    public func history(session: String, limit: Int?) async throws -> [Event] {
        let thread = try threadID(session)
        let client = try await client()
        // Newest first, page by page, as far as the limit asks; then oldest first.
        var turns: [JSONValue] = []
        var cursor: String?
        repeat {
            var params: JSONObject = ["threadId": .string(thread), "itemsView": "full", "sortDirection": "desc", "limit": 50]
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await client.call("thread/turns/list", params, doing: "reading the turns of thread \(thread)")
            turns += page["data"]?.array ?? []
            cursor = page["nextCursor"]?.string
        } while cursor != nil && (limit.map { turns.count < $0 } ?? true)
        return CodexAppServerMapper.history(scope: nil, thread: ["id": .string(thread), "turns": .array(turns.reversed())], limit: limit)
    }

    // MARK: Turns

    public func send(_ request: SendRequest) async throws -> SendReceipt {
        try requireLongLived("`tether send` without --follow")
        return try await startTurn(request, using: try await client())
    }

    /// `thread/resume` (a thread this app-server has not loaded refuses turns, and only a
    /// subscribed connection hears the turn), then `turn/start` with a `clientUserMessageId`.
    func startTurn(_ request: SendRequest, using client: CodexAppServerClient) async throws -> SendReceipt {
        let thread = try threadID(request.session)
        do {
            _ = try await client.call("thread/resume", ["threadId": .string(thread), "excludeTurns": true], doing: "resuming thread \(thread)")
        } catch let error as TetherError where error.code == .notFound && error.message.contains("no rollout found") {
            // A thread without a first turn has nothing to resume; this connection started it.
        }
        var params: JSONObject = [
            "threadId": .string(thread),
            "input": [["type": "text", "text": .string(request.text), "text_elements": []]],
            "clientUserMessageId": .string(request.clientMessageID ?? "tether-\(Self.uniqueID())"),
        ]
        if let model = request.model { params["model"] = .string(model) }
        let result = try await client.call("turn/start", params, doing: "starting a turn in thread \(thread)")
        return SendReceipt(session: request.session, turn: result["turn"]?["id"]?.string,
                           data: .compact(["status": JSONValue(result["turn"]?["status"]?.string)]))
    }

    static func uniqueID() -> String {
        (0..<16).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
    }

    public func sendAndFollow(_ request: SendRequest) -> EventStream {
        var request = request
        if request.clientMessageID == nil { request.clientMessageID = "tether-\(Self.uniqueID())" }
        return CodexAppServerEventStream(
            backend: self, request: EventsRequest(session: request.session, follow: true, untilTurnCompletes: true, raw: request.raw),
            sendOnReady: request).run()
    }

    public func events(_ request: EventsRequest) -> EventStream {
        CodexAppServerEventStream(backend: self, request: request, sendOnReady: nil).run()
    }

    public func abort(session: String, turn: String?) async throws {
        try requireLongLived("`tether abort`")
        let thread = try threadID(session)
        let client = try await client()
        var turnID = turn
        if turnID == nil { turnID = CodexThread.runningTurns(try await resume(client, thread: thread)).last }
        guard let turnID else {
            throw TetherError(.failed, "thread \(thread) has no running turn to abort", hint: "`tether events --session \(session)` shows its turns")
        }
        _ = try await client.call("turn/interrupt", ["threadId": .string(thread), "turnId": .string(turnID)],
                                  doing: "interrupting turn \(turnID)")
    }

    // MARK: Approvals

    public func pendingApprovals(session: String?) async throws -> [Approval] {
        try requireLongLived("`tether approvals`")
        let subscription = try await hub.subscribe()
        defer { hub.unsubscribe(subscription.id) }
        let client = subscription.connection.client
        let threads: [String]
        if let session { threads = [try threadID(session)] } else { threads = try await activeThreads(client) }
        var mapper = CodexAppServerMapper(answersQuestions: true)
        // Codex sends a thread's pending requests again when it is resumed; nothing else lists them.
        for thread in threads {
            do {
                _ = mapper.reconcile(scope: nil, thread: try await resume(client, thread: thread))
            } catch let error as TetherError where error.code == .notFound && session == nil {
                // A loaded thread without a first turn ("no rollout found") has nothing pending.
                logger.debug("skipping a thread Codex cannot resume", metadata: ["thread": "\(thread)", "error": "\(error.message)"])
            }
        }
        for message in try await settle(subscription.inbox) { _ = mapper.map(scope: nil, message: message) }
        return mapper.approvals(session: session)
    }

    public func approve(id: String, answer: ApprovalAnswer) async throws -> Event {
        guard let approval = CodexApprovalID(parsing: id, scoped: false) else {
            throw TetherError(.usage, "\"\(id)\" is not a Codex approval id (THREAD~REQUEST~KIND~TURN~ITEM, as approval.requested prints it)")
        }
        try requireLongLived("`tether approve`")
        // A question's answer needs its questions' ids, which come with the request itself.
        // (Typed: JSONValue takes a nil literal as null.)
        let decided: JSONValue? = approval.kind == .userInput ? Optional.none : try CodexDecision.result(for: answer, kind: approval.kind)
        let subscription = try await hub.subscribe()
        defer { hub.unsubscribe(subscription.id) }
        let client = subscription.connection.client
        // Resuming makes Codex send the thread's pending requests to this connection again: the
        // request is still waiting only if it comes, with its id and item. Request ids restart
        // at 0 in a new app-server process, so the id alone could answer a request nobody saw.
        _ = try await resume(client, thread: approval.thread)
        guard let request = try await awaitRequest(approval, in: subscription.inbox) else {
            throw TetherError(.notFound, "approval \(id) is no longer pending: Codex did not ask it again when its thread was resumed",
                              hint: "it was answered, or its turn ended; `tether approvals` lists what is pending")
        }
        let result = try decided ?? CodexDecision.userInputResult(for: answer, questions: request["params"]?["questions"]?.array ?? [])
        logger.debug("answering a Codex request", metadata: ["approval": "\(id)", "result": "\(result.serialized)"])
        answers.record(answer.decision, for: id)
        do {
            try await client.respond(to: approval.request, result: result, doing: "answering approval \(id)")
        } catch {
            answers.forget(id)
            throw error
        }
        // Codex confirms the first answer it takes with `serverRequest/resolved`, to every
        // subscriber. Waiting for it means the answer arrived before this process (and a tunnel
        // it opened) goes away.
        guard try await awaitResolution(approval, in: subscription.inbox) else {
            throw TetherError(.timeout, "approval \(id) was answered, but Codex did not confirm it within \(configuration.requestTimeout.secondsText)",
                              hint: "`tether approvals` shows whether it is still pending", retryable: true)
        }
        return .approvalResolved(id: id, session: approval.session, turn: approval.turn, decision: answer.decision.rawValue)
    }

    /// `approval`'s request, if it arrives within the settle time (at most four times it).
    private func awaitRequest(_ approval: CodexApprovalID, in inbox: CodexAppServerInbox) async throws -> JSONValue? {
        let deadline = ContinuousClock.now + configuration.settle * 4
        while ContinuousClock.now < deadline {
            switch try await inbox.next(timeout: deadline - .now) {
            case .ended, .timedOut:
                return nil
            case .batch(let messages, _):
                for message in messages.compactMap(\.whole) {  // a request is never read straight
                    guard let request = message["id"], CodexApprovalID.token(for: request) == CodexApprovalID.token(for: approval.request),
                          CodexApprovalID.Kind(method: message["method"]?.string ?? "") == approval.kind,
                          message["params"]?["threadId"]?.string == approval.thread else { continue }
                    if let item = approval.item, message["params"]?["itemId"]?.string != item { continue }
                    return message
                }
            }
        }
        return nil
    }

    /// Whether Codex confirms `approval` was resolved (`serverRequest/resolved` for its request, or
    /// its turn ending) within the request timeout.
    private func awaitResolution(_ approval: CodexApprovalID, in inbox: CodexAppServerInbox) async throws -> Bool {
        let deadline = ContinuousClock.now + configuration.requestTimeout
        let token = CodexApprovalID.token(for: approval.request)
        while ContinuousClock.now < deadline {
            switch try await inbox.next(timeout: deadline - .now) {
            case .ended, .timedOut:
                return false
            case .batch(let messages, _):
                for message in messages.compactMap(\.whole) where message["params"]?["threadId"]?.string == approval.thread {
                    switch message["method"]?.string {
                    case "serverRequest/resolved":
                        if let request = message["params"]?["requestId"], CodexApprovalID.token(for: request) == token { return true }
                    case "turn/completed":
                        if approval.turn == nil || message["params"]?["turn"]?["id"]?.string == approval.turn { return true }
                    default:
                        break
                    }
                }
            }
        }
        return false
    }

    /// What arrives until nothing has for the settle time (at most four times it).
    private func settle(_ inbox: CodexAppServerInbox) async throws -> [JSONValue] {
        var collected: [JSONValue] = []
        let deadline = ContinuousClock.now + configuration.settle * 4
        while ContinuousClock.now < deadline {
            switch try await inbox.next(timeout: Swift.min(configuration.settle, deadline - .now)) {
            case .ended, .timedOut: return collected
            case .batch(let messages, _): collected += messages.map(\.json)
            }
        }
        return collected
    }
}
