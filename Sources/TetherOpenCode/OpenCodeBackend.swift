import Foundation
import Logging
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// The `opencode` backend: an OpenCode server (`opencode serve`), over REST and the
/// `/global/event` SSE stream. See adapters.md (OpenCode) for the mapping.
public struct OpenCodeBackend: Backend {
    public struct Configuration: Sendable {
        public var baseURL: String
        public var username: String
        public var password: String?
        /// Only events and sessions of this project directory (all when nil).
        public var directory: String?
        public var profile: String
        /// Reconnect after this long without a byte. Current servers heartbeat every 10 s, legacy
        /// ones every 30 s: the default waits half a legacy interval more than that. Never less
        /// than one and a half `heartbeat`s (`streamLiveness`).
        public var liveness: Duration
        /// How often the server sends `server.heartbeat` (current servers: 10 s).
        public var heartbeat: Duration = .seconds(10)
        /// The liveness watchdog's timeout: shorter than one and a half heartbeats, a quiet session's
        /// healthy stream was dropped and reopened again and again (ReconnectPolicy.liveness).
        public var streamLiveness: Duration { ReconnectPolicy.liveness(liveness, heartbeat: heartbeat) }
        /// While a session is busy and the stream brings nothing but heartbeats for this long,
        /// poll REST (servers that stop delivering events: OpenCode issue #46733).
        public var pollInterval: Duration
        /// When and how often a lost stream is reconnected.
        public var reconnect: ReconnectPolicy.Configuration

        public init(baseURL: String, username: String = "opencode", password: String?, directory: String?, profile: String,
                    liveness: Duration = .seconds(45), pollInterval: Duration = .seconds(10),
                    reconnect: ReconnectPolicy.Configuration = .init()) {
            self.baseURL = baseURL
            self.username = username
            self.password = password
            self.directory = directory
            self.profile = profile
            self.liveness = liveness
            self.pollInterval = pollInterval
            self.reconnect = reconnect
        }
    }

    public let kind = BackendKind.openCode
    /// `resume` (`events --since SEQ`) is 2.x's durable session log: listed until the server is
    /// known to be 1.x (then `--since` is refused, see `OpenCodeEventStream`).
    public var capabilities: BackendCapabilities {
        let common: BackendCapabilities = [.sessions, .createSession, .history, .send, .events, .approvals, .abort, .questions]
        return generation.isV2.withLock { $0 } == false ? common : common.union(.resume)
    }

    let configuration: Configuration
    let client: OpenCodeClient
    /// The 2.x surface (`/api/*`) of the same server, used once `isGeneration2()` says so.
    let client2: OpenCode2Client
    let generation = OpenCodeServerGeneration()
    let logger: Logger

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        client = OpenCodeClient(
            configuration: .init(baseURL: configuration.baseURL, username: configuration.username,
                                 password: configuration.password, directory: configuration.directory,
                                 profile: configuration.profile),
            http: HTTPClient(logger: logger))
        client2 = OpenCode2Client(client)
    }

    public func check() async throws -> CheckReport {
        if try await isGeneration2() { return try await check2() }
        let health = try await client.get("/global/health", scoped: false)
        // Health may be open on some servers: a scoped read proves the credentials too.
        _ = try await client.get("/session")
        let generation = OpenCodeAPIGeneration(permissionList: try await client.getIfServed("/permission"))
        logger.info("OpenCode API generation", metadata: ["api": "\(generation.rawValue)"])
        var details: JSONObject = ["healthy": health["healthy"] ?? .null, "api": .string(generation.rawValue)]
        if let directory = configuration.directory { details["directory"] = .string(directory) }
        return CheckReport(endpoint: configuration.baseURL, reachable: true, authenticated: configuration.password != nil,
                           version: health["version"]?.string, details: details)
    }

    // MARK: Sessions

    public func listSessions(_ request: SessionListRequest) async throws -> [Session] {
        if try await isGeneration2() { return try await listSessions2(request) }
        let list = try await client.get("/session")
        let statuses = (try? await client.get("/session/status"))?.object ?? [:]
        var sessions = (list.array ?? []).compactMap { info -> Session? in
            guard var session = OpenCodeEventMapper.session(from: info) else { return nil }
            session.status = Self.status(statuses[session.id])
            return session
        }
        if !request.includeArchived { sessions.removeAll { $0.archived == true } }
        return sessions.sorted { ($0.updatedAt ?? 0) > ($1.updatedAt ?? 0) }
    }

    public func createSession(_ request: SessionCreateRequest) async throws -> Session {
        if try await isGeneration2() { return try await createSession2(request) }
        var body: JSONObject = [:]
        if let title = request.title { body["title"] = .string(title) }
        var path = "/session"
        if let directory = request.directory {
            path += "?directory=" + (directory.addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed) ?? directory)
        }
        let created = try await client.call(.post, path, body: .object(body), scoped: request.directory == nil)
        guard let session = OpenCodeEventMapper.session(from: created) else {
            throw TetherError(.badData, "OpenCode created a session but its answer has no id: \(created.serialized.prefix(200))")
        }
        return session
    }

    public func session(id: String) async throws -> Session {
        if try await isGeneration2() { return try await session2(id: id) }
        let info = try await client.get("/session/\(Self.escape(id))")
        guard var session = OpenCodeEventMapper.session(from: info) else {
            throw TetherError(.badData, "OpenCode's session \(id) has no id field")
        }
        let statuses = (try? await client.get("/session/status"))?.object ?? [:]
        session.status = Self.status(statuses[id])
        return session
    }

    static func status(_ value: JSONValue?) -> SessionStatus {
        switch value?["type"]?.string {
        case nil, "idle": return .idle
        case "retry": return .retrying
        default: return .busy
        }
    }

    /// An id as one path segment of the server's URL (`PathSegment`: `.` and `..` refused).
    static func escape(_ id: String) throws(TetherError) -> PathSegment {
        try PathSegment(id)
    }

    // MARK: History

    public func history(session: String, limit: Int?) async throws -> [Event] {
        if try await isGeneration2() { return try await history2(session: session, limit: limit) }
        let messages = try await client.get("/session/\(Self.escape(session))/message").array ?? []
        let statuses = (try? await client.get("/session/status"))?.object ?? [:]
        var mapper = OpenCodeEventMapper()
        mapper.contextWindows = await contextWindows()
        var events = mapper.replay(session: session, messages: messages, busy: Self.status(statuses[session]) != .idle)
        if let limit {
            let turns = events.filter { $0.type == .turnStarted }.compactMap(\.turn).suffix(limit)
            let keep = Set(turns)
            events.removeAll { $0.turn == nil || !keep.contains($0.turn!) }
        }
        return events
    }

    /// Context windows by `provider/model` (`GET /config/providers`); empty when unavailable.
    func contextWindows() async -> [String: Int] {
        guard let providers = try? await client.get("/config/providers")["providers"]?.array else { return [:] }
        var windows: [String: Int] = [:]
        for provider in providers {
            guard let providerID = provider["id"]?.string, let models = provider["models"]?.object else { continue }
            for (modelID, model) in models {
                if let context = model["limit"]?["context"]?.int { windows["\(providerID)/\(modelID)"] = Int(context) }
            }
        }
        return windows
    }

    // MARK: Turns

    public func send(_ request: SendRequest) async throws -> SendReceipt {
        if try await isGeneration2() { return try await send2(request) }
        var body: JSONObject = ["parts": [["type": "text", "text": .string(request.text)]]]
        if let model = request.model {
            let split = model.split(separator: "/", maxSplits: 1)
            guard split.count == 2 else {
                throw TetherError(.usage, "OpenCode models are named provider/model, got \"\(model)\"",
                                  hint: "e.g. --model anthropic/claude-sonnet-4")
            }
            body["model"] = ["providerID": .string(String(split[0])), "modelID": .string(String(split[1]))]
        }
        _ = try await client.post("/session/\(Self.escape(request.session))/prompt_async", body: .object(body))
        return SendReceipt(session: request.session, turn: nil,
                           data: ["note": "the turn's id is the user message's, announced by turn.started"])
    }

    public func sendAndFollow(_ request: SendRequest) -> EventStream {
        OpenCodeEventStream(backend: self, request: EventsRequest(session: request.session, follow: true, untilTurnCompletes: true, raw: request.raw),
                            sendOnReady: request).run()
    }

    public func events(_ request: EventsRequest) -> EventStream {
        OpenCodeEventStream(backend: self, request: request, sendOnReady: nil).run()
    }

    public func abort(session: String, turn: String?) async throws {
        if try await isGeneration2() { return try await abort2(session: session) }
        _ = try await client.post("/session/\(Self.escape(session))/abort", body: nil)
    }

    // MARK: Approvals

    public func pendingApprovals(session: String?) async throws -> [Approval] {
        if try await isGeneration2() { return try await pendingApprovals2(session: session) }
        guard let permissions = try await client.getIfServed("/permission") else {
            throw TetherError(.unsupported, "this OpenCode server (legacy API, no GET /permission) cannot list its pending permissions",
                              hint: "they are announced as approval.requested by `tether events --follow`; answer one with `tether approve ID`")
        }
        var approvals = (permissions.array ?? []).compactMap { OpenCodeEventMapper.approval(fromPermission: $0, turn: nil) }
        if let questions = try await client.getIfServed("/question")?.array {
            var mapper = OpenCodeEventMapper()
            for question in questions {
                let events = mapper.map(OpenCodeWireEvent(type: "question.asked", properties: question, directory: nil, raw: question))
                for event in events where event.type == .approvalRequested {
                    if let approval = mapper.pendingApprovals.values.first(where: { $0.id == event.data["id"]?.string }) {
                        approvals.append(approval)
                    }
                }
            }
        }
        if let session { approvals.removeAll { $0.session != session } }
        return approvals
    }

    public func approve(id: String, answer: ApprovalAnswer) async throws -> Event {
        if try await isGeneration2() { return try await approve2(id: id, answer: answer) }
        let parts = CompositeID.split(id, count: 2)
        let session = parts?[0]
        let request = parts?[1] ?? id
        if request.hasPrefix("que_") {
            return try await answerQuestion(id: id, session: session, request: request, answer: answer)
        }
        let reply = try OpenCodeDecision.reply(for: answer.decision)
        do {
            _ = try await client.post("/permission/\(Self.escape(request))/reply", body: ["reply": .string(reply)])
        } catch let error as TetherError where error.code == .notFound && session != nil {
            // Older servers only have the per-session route.
            do {
                _ = try await client.post("/session/\(Self.escape(session!))/permissions/\(Self.escape(request))",
                                          body: ["response": .string(reply)])
            } catch let legacy as TetherError where legacy.code == .notFound {
                throw TetherError(.notFound, "approval \(id) is not pending on OpenCode (answered already, or its turn ended)",
                                  hint: "`tether approvals` lists what is pending")
            }
        }
        if answer.decision == .cancel, let session {
            try await abort(session: session, turn: nil)
        }
        return .approvalResolved(id: id, session: session, turn: nil, decision: answer.decision.rawValue)
    }
}
