import Foundation
import Logging
import Synchronization
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// The `codex-worker` backend: the Codex Worker (a Node service in front of `codex app-server`)
/// over REST and per-job SSE. Sessions are threads, turns are jobs. See adapters.md.
public struct CodexWorkerBackend: Backend {
    public struct Configuration: Sendable {
        public var baseURL: String
        public var token: String?
        public var profile: String
        /// No byte for this long reconnects; never less than one and a half `heartbeat`s
        /// (`streamLiveness`).
        public var liveness: Duration
        /// How often the worker sends `: ping` on an SSE stream (15 s).
        public var heartbeat: Duration = .seconds(15)
        /// The liveness watchdog's timeout: a job waiting for an approval sends nothing but its
        /// pings, and a profile's `liveness = 10` reconnected it every 10 s (ReconnectPolicy.liveness).
        public var streamLiveness: Duration { ReconnectPolicy.liveness(liveness, heartbeat: heartbeat) }
        /// How often `events --session` looks for the thread's next job.
        public var jobPollInterval: Duration
        /// When and how often a lost stream is reconnected.
        public var reconnect: ReconnectPolicy.Configuration

        public init(baseURL: String, token: String?, profile: String, liveness: Duration = .seconds(45),
                    jobPollInterval: Duration = .seconds(2), reconnect: ReconnectPolicy.Configuration = .init()) {
            self.baseURL = baseURL
            self.token = token
            self.profile = profile
            self.liveness = liveness
            self.jobPollInterval = jobPollInterval
            self.reconnect = reconnect
        }
    }

    public let kind = BackendKind.codexWorker
    public let capabilities: BackendCapabilities = [.sessions, .createSession, .history, .send, .events, .resume, .approvals, .abort, .archive]

    let configuration: Configuration
    let client: CodexWorkerClient
    let logger: Logger
    /// Threads this process created: the worker lists a thread only after its first turn.
    private let createdThreads = CreatedThreads()

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        client = CodexWorkerClient(configuration: .init(baseURL: configuration.baseURL, token: configuration.token,
                                                        profile: configuration.profile),
                                   http: HTTPClient(logger: logger))
    }

    /// Runs a call, translating the worker's error codes.
    func api<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CodexWorkerClient.APIError {
            throw client.tetherError(error, doing: what)
        }
    }

    public func check() async throws -> CheckReport {
        let health = try await api("GET /health") { try await client.get("/health", authenticated: false) }
        let projects = try await api("GET /v1/projects") { try await client.get("/v1/projects") }
        let authEnabled = health["authEnabled"]?.bool ?? false
        let status = health["status"]?.string
        var details: JSONObject = ["auth_enabled": .bool(authEnabled), "projects": projects["data"] ?? .array([])]
        if status != "ok" { details["problem"] = .string("GET /health says status \(status.map { "\"\($0)\"" } ?? "(none)"), not \"ok\"") }
        return CheckReport(endpoint: configuration.baseURL, reachable: status == "ok", authenticated: authEnabled, version: nil,
                           details: details)
    }

    // MARK: Sessions (threads)

    static func session(from thread: JSONValue, archived: Bool? = nil) -> Session? {
        guard let id = thread["threadId"]?.string else { return nil }
        // Thread times are unix seconds from codex; the domain speaks milliseconds.
        let title = [thread["name"]?.string, thread["preview"]?.string].compactMap { $0 }.first { !$0.isEmpty }
        return Session(id: id, title: title, directory: thread["cwd"]?.string,
                       createdAt: thread["createdAt"]?.double.map { $0 * 1000 }, updatedAt: thread["updatedAt"]?.double.map { $0 * 1000 },
                       status: (thread["pendingApprovalCount"]?.int ?? 0) > 0 ? .waitingApproval : nil, archived: archived)
    }

    public func listSessions(_ request: SessionListRequest) async throws -> [Session] {
        var sessions = try await api("listing threads") { try await client.get("/v1/threads") }["data"]?.array?
            .compactMap { Self.session(from: $0, archived: false) } ?? []
        if request.includeArchived {
            do {
                let archived = try await client.get("/v1/threads?archived=true")["data"]?.array?
                    .compactMap { Self.session(from: $0, archived: true) } ?? []
                // A worker that predates archiving ignores the query and lists the active threads again.
                let active = Set(sessions.map(\.id))
                sessions += archived.filter { !active.contains($0.id) }
            } catch let error as CodexWorkerClient.APIError
                where MissingRoute.matches(error) || ["INVALID_QUERY", "INVALID_ARCHIVED"].contains(error.code) {
                // A worker without thread archive: it has no archived threads to list.
                logger.info("this Codex Worker does not list archived threads; listing the active ones only",
                            metadata: ["status": "\(error.status)", "code": "\(error.code)"])
            } catch let error as CodexWorkerClient.APIError {
                throw client.tetherError(error, doing: "listing archived threads")
            }
        }
        return sessions.sorted { ($0.updatedAt ?? 0) > ($1.updatedAt ?? 0) }
    }

    public func createSession(_ request: SessionCreateRequest) async throws -> Session {
        var body: JSONObject = [:]
        if let directory = request.directory {
            // A project is named by its id (proj_N, from GET /v1/projects) or by its path.
            body[directory.hasPrefix("proj_") ? "projectId" : "projectPath"] = .string(directory)
        }
        if let title = request.title { body["threadName"] = .string(title) }
        let created = try await api("creating a thread") { try await client.post("/v1/threads", body: .object(body)) }
        guard var session = Self.session(from: created["thread"] ?? .null) else {
            throw TetherError(.badData, "the Codex Worker created a thread but sent no threadId")
        }
        if session.title == nil { session.title = request.title }
        createdThreads.note(session)
        return session
    }

    public func session(id: String) async throws -> Session {
        let sessions = try await listSessions(SessionListRequest(includeArchived: true))
        if let session = sessions.first(where: { $0.id == id }) { return session }
        // New threads are not listed until their first turn. Reading must not change the
        // worker (`POST …/activate` would resume the thread with the worker's own policy): a
        // thread this process created is known from its creation, any other is not found yet.
        if let created = createdThreads[id] { return created }
        throw TetherError(.notFound, "the Codex Worker lists no thread \(id)",
                          hint: "a new thread is listed once it has had a turn; `tether sessions list` shows the threads")
    }

    public func setArchived(_ archived: Bool, session: String) async throws -> Session {
        let verb = archived ? "archive" : "unarchive"
        do {
            _ = try await client.post("/v1/threads/\(PathSegment(session, what: "thread id"))/\(verb)", body: nil)
        } catch let error as CodexWorkerClient.APIError where MissingRoute.matches(error) {
            throw MissingRoute(route: "POST /v1/threads/{id}/\(verb)", status: error.status, code: error.code, baseURL: configuration.baseURL)
                .tetherError(doing: "\(verb) thread \(session)", hint: "this worker has no thread archive")
        } catch let error as CodexWorkerClient.APIError {
            throw client.tetherError(error, doing: "\(verb) thread \(session)")
        }
        var result = (try? await self.session(id: session)) ?? Session(id: session)
        result.archived = archived
        return result
    }

    // MARK: History

    /// Every envelope of a thread's history, paged (`GET /v1/threads/{id}/events`). The list can
    /// shrink between two pages — an active job is listed with all its retained events, a finished
    /// one as a few synthesized ones — and a cursor past the new end is `409
    /// THREAD_CURSOR_EXPIRED`: then the history is read again from the start.
    func threadEnvelopes(_ thread: String) async throws -> [JSONValue] {
        var attempt = 1
        while true {
            do {
                return try await threadEnvelopesOnce(thread)
            } catch let error as CodexWorkerClient.APIError where error.code == "THREAD_CURSOR_EXPIRED" && attempt < 3 {
                attempt += 1
                logger.debug("the thread's history changed while it was read; reading it again", metadata: ["thread": "\(thread)"])
            } catch let error as CodexWorkerClient.APIError where MissingRoute.matches(error) {
                throw MissingRoute(route: "GET /v1/threads/{id}/events", status: error.status, code: error.code, baseURL: configuration.baseURL)
            } catch let error as CodexWorkerClient.APIError {
                throw client.tetherError(error, doing: "reading the history of thread \(thread)")
            }
        }
    }

    /// A route this worker does not have (an older or differently configured worker): the
    /// worker's unknown-route answer (404 `NOT_FOUND`, or a bare 404 from a proxy), 405 or 501.
    /// Not the 404s that name a missing thing (`JOB_NOT_FOUND`, …).
    struct MissingRoute: Error {
        let route: String
        let status: Int
        let code: String
        let baseURL: String

        static func matches(_ error: CodexWorkerClient.APIError) -> Bool {
            (error.status == 404 && (error.code == "NOT_FOUND" || error.code == "HTTP_404")) || error.status == 405 || error.status == 501
        }

        func tetherError(doing what: String, hint: String) -> TetherError {
            TetherError(.unsupported, "\(what) needs \(route), which the Codex Worker at \(baseURL) does not have (it answered \(status) \(code))",
                        hint: hint)
        }
    }

    /// Thread history for a command (not a stream): a worker without it is a clear `unsupported`.
    private func threadEnvelopes(_ thread: String, for what: String, hint: String) async throws -> [JSONValue] {
        do {
            return try await threadEnvelopes(thread)
        } catch let missing as MissingRoute {
            throw missing.tetherError(doing: what, hint: hint)
        }
    }

    private func threadEnvelopesOnce(_ thread: String) async throws -> [JSONValue] {
        var envelopes: [JSONValue] = []
        var cursor: Int64 = -1
        while true {
            let page = try await client.get("/v1/threads/\(PathSegment(thread, what: "thread id"))/events?cursor=\(cursor)&limit=200")
            let data = page["data"]?.array ?? []
            envelopes += data
            guard page["hasMore"]?.bool == true, let next = page["nextCursor"]?.int, next > cursor, !data.isEmpty else { break }
            cursor = next
        }
        return envelopes
    }

    public func history(session: String, limit: Int?) async throws -> [Event] {
        var mapper = CodexWorkerEventMapper()
        var events = try await threadEnvelopes(session, for: "reading the history of thread \(session)",
                                               hint: "this worker keeps no thread history; a job's events: tether events --turn JOB")
            .flatMap { mapper.map($0) }
        for index in events.indices where events[index].session == nil { events[index].session = session }
        if let limit {
            let keep = Set(events.filter { $0.type == .turnStarted }.compactMap(\.turn).suffix(limit))
            events.removeAll { $0.turn.map { !keep.contains($0) } ?? true }
        }
        return events
    }

    /// The thread's job that has not finished, from its history (which carries live job ids).
    /// Throws `MissingRoute` on a worker without thread history.
    func activeJob(thread: String) async throws -> String? {
        CodexWorkerThreadJobs.entries(fromHistory: try await threadEnvelopes(thread), thread: thread)
            .last { !$0.finished && !$0.isForgotten }?.job
    }

    // MARK: Turns (jobs)

    public func send(_ request: SendRequest) async throws -> SendReceipt {
        var body: JSONObject = ["text": .string(request.text)]
        if let model = request.model { body["model"] = .string(model) }
        do {
            let snapshot = try await client.post("/v1/threads/\(PathSegment(request.session, what: "thread id"))/turns", body: .object(body))
            guard let job = snapshot["jobId"]?.string else {
                throw TetherError(.badData, "the Codex Worker accepted the turn but sent no jobId")
            }
            return SendReceipt(session: request.session, turn: job, data: .compact([
                "job": .string(job), "state": JSONValue(snapshot["state"]?.string),
            ]))
        } catch let error as CodexWorkerClient.APIError where error.code == "THREAD_HAS_ACTIVE_JOB" {
            let active = try? await activeJob(thread: request.session)
            let job = active ?? "JOB"
            throw TetherError(.conflict, "thread \(request.session) already has a turn running\(active.map { " (job \($0))" } ?? "") — the worker answered 409 THREAD_HAS_ACTIVE_JOB",
                              hint: "follow it: tether events --turn \(job) --follow; or stop it: tether abort \(request.session) --turn \(job)")
        } catch let error as CodexWorkerClient.APIError {
            throw client.tetherError(error, doing: "starting a turn in thread \(request.session)")
        }
    }

    public func sendAndFollow(_ request: SendRequest) -> EventStream {
        EventChannel.stream { channel in
            let receipt = try await send(request)
            // The job keeps its events, so following from its start after the send loses nothing.
            let follower = CodexWorkerJobFollower(backend: self, job: receipt.turn!, thread: request.session, since: nil,
                                                  keepsRaw: request.raw)
            var mapper = CodexWorkerEventMapper()
            let emit: ([Event]) async throws -> Void = { try await channel.send(contentsOf: $0) }
            // A worker down for a moment between the POST and the end of the job is retried, as
            // `events --turn --follow` does: the job keeps its events, and a retry resumes after
            // the last seq.
            _ = try await follower.retryingPassingFailures(doing: "streaming job \(receipt.turn!)", mapper: &mapper, emit: emit) { mapper in
                try await follower.follow(mapper: &mapper, live: true, emit: emit)
            }
        }
    }

    public func events(_ request: EventsRequest) -> EventStream {
        EventChannel.stream { channel in
            try await CodexWorkerEventStream(backend: self, request: request).run { try await channel.send(contentsOf: $0) }
        }
    }

    public func abort(session: String, turn: String?) async throws {
        var job = turn
        if job == nil {
            do {
                job = try await activeJob(thread: session)
            } catch let missing as MissingRoute {
                throw missing.tetherError(doing: "finding the running turn of thread \(session)",
                                          hint: "name the job: tether abort \(session) --turn JOB")
            }
        }
        guard let job else {
            throw TetherError(.failed, "thread \(session) has no running turn to abort", hint: "`tether events --session \(session)` shows its turns")
        }
        _ = try await api("cancelling job \(job)") { try await client.post("/v1/jobs/\(PathSegment(job, what: "job id"))/cancel", body: nil) }
    }

    // MARK: Approvals

    public func pendingApprovals(session: String?) async throws -> [Approval] {
        var threads: [String]
        if let session {
            threads = [session]
        } else {
            threads = try await api("listing threads") { try await client.get("/v1/threads") }["data"]?.array?
                .filter { ($0["pendingApprovalCount"]?.int ?? 0) > 0 }.compactMap { $0["threadId"]?.string } ?? []
        }
        var approvals: [Approval] = []
        for thread in threads {
            let active: String?
            do {
                active = try await activeJob(thread: thread)
            } catch let missing as MissingRoute {
                // Without thread history the waiting job cannot be found: say so at -v, list the rest.
                logger.info("this Codex Worker has no thread history: approvals of thread \(thread) cannot be listed",
                            metadata: ["route": "\(missing.route)", "status": "\(missing.status)", "code": "\(missing.code)"])
                continue
            }
            guard let job = active else { continue }
            let replay = try await api("reading job \(job)") { try await client.get("/v1/jobs/\(PathSegment(job, what: "job id"))/events") }
            var mapper = CodexWorkerEventMapper()
            mapper.noteThread(thread, job: job)
            for envelope in replay["data"]?.array ?? [] { _ = mapper.map(envelope) }
            approvals += mapper.pendingApprovals.values.sorted { $0.id < $1.id }
        }
        return approvals
    }

    public func approve(id: String, answer: ApprovalAnswer) async throws -> Event {
        guard let parts = CompositeID.split(id, count: 2) else {
            throw TetherError(.usage, "\"\(id)\" is not a Codex Worker approval id (JOB~APPROVAL, as printed by approval.requested)")
        }
        let (job, approval) = (parts[0], parts[1])
        var body: JSONObject = ["approvalId": .string(approval)]
        switch answer.decision {
        case .accept: body["decision"] = "accept"
        case .acceptForSession: body["decision"] = "accept_for_session"
        case .acceptWithAmendment:
            body["decision"] = "accept_with_execpolicy_amendment"
            body["execPolicyAmendment"] = JSONValue(answer.amendment)
        case .decline: body["decision"] = "decline"
        case .cancel: body["decision"] = "cancel"
        }
        let result = try await api("answering approval \(id)") { try await client.post("/v1/jobs/\(PathSegment(job, what: "job id"))/approve", body: .object(body)) }
        var event = Event.approvalResolved(id: id, session: nil, turn: job, decision: answer.decision.rawValue)
        if result["status"]?.string == "already_submitted" {
            // Idempotent: the first answer stands.
            event.data["decision"] = .string(CodexWorkerEventMapper.decision(fromWorker: result["decision"]?.string))
            event.data["already_submitted"] = true
        }
        return event
    }
}

/// The threads a backend created, by id (shared by its copies).
final class CreatedThreads: Sendable {
    private let threads = Mutex<[String: Session]>([:])

    func note(_ session: Session) {
        threads.withLock { $0[session.id] = session }
    }

    subscript(id: String) -> Session? {
        threads.withLock { $0[id] }
    }
}
