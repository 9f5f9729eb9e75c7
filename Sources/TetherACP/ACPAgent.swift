import Logging
import TetherCore
import TetherStreaming

/// `tether acp`: an ACP agent (JSON-RPC 2.0, one message a line) over one profile's `Backend`.
/// This actor is the thin I/O around the pure parts — `JSONRPCMessage` framing,
/// `SessionUpdateMapper` for events, `PermissionRequests` for approvals. Each request runs in a
/// task of its own and is answered by its id, so a long `session/prompt` never holds up others;
/// each gets exactly one answer, even when stdin closes first.
public actor ACPAgent {
    public struct Configuration: Sendable {
        /// Reported as `agentInfo.version`.
        public var version: String
        /// The profile's name, for `agentInfo.title` and messages.
        public var profile: String
        /// The profile pins where sessions live (OpenCode `directory`, CodexMonitor `workspace`):
        /// `session/new` then ignores the editor's cwd and the backend uses the profile's.
        public var profilePinsDirectory: Bool
        /// After `session/cancel`, how long the prompt waits for the backend's cancelled turn
        /// before answering `cancelled` anyway (the contract allows 10 s).
        public var cancelGrace: Duration
        /// At stdin's EOF, how long the requests already read may take to finish before they are
        /// answered with an error (the contract: the process ends within 5 s).
        public var shutdownGrace: Duration
        /// How a command said to the user starts, so that it reaches this profile through this
        /// config file (`tether -p NAME --config PATH` where those are not the defaults).
        public var tether: String

        public init(version: String, profile: String, profilePinsDirectory: Bool = false,
                    cancelGrace: Duration = .seconds(8), shutdownGrace: Duration = .seconds(2), tether: String? = nil) {
            self.version = version
            self.profile = profile
            self.tether = tether ?? "tether -p \(profile)"
            self.profilePinsDirectory = profilePinsDirectory
            self.cancelGrace = cancelGrace
            self.shutdownGrace = shutdownGrace
        }
    }

    /// A `session/prompt` in progress.
    struct PromptRun {
        /// Tells this run from the session's earlier and later ones.
        let id: Int
        var turn: String?
        var cancelRequested = false
        var follower: Task<PromptEnd, Never>?
        /// Started by `session/cancel`: ends the prompt if the backend does not end the turn in
        /// time. Cancelled when the prompt ends.
        var graceTimer: Task<Void, Never>?
    }

    enum PromptEnd {
        case completed, cancelled
        case failed(JSONRPCError)
    }

    let configuration: Configuration
    let backend: any Backend
    let output: ACPOutput
    let logger: Logger

    /// Sessions the editor created or loaded on this connection: the only ones it hears about.
    var openSessions: Set<String> = []
    var prompts: [String: PromptRun] = [:]
    var permissions = PermissionRequests()
    var runCounter = 0
    /// Waits out the cancel grace: `Task.sleep`, or a timer a test ends.
    let sleep: @Sendable (Duration) async throws -> Void
    private var nextRequestID: Int64 = 0
    private var tasks: [Int: Task<Void, Never>] = [:]
    private var taskCounter = 0
    /// Requests read and not answered yet: at EOF, those the deadline leaves get an error.
    private var unanswered: [Int: OpenRequest] = [:]
    private var requestCounter = 0
    /// At EOF, resumed when no task is left or the deadline is over, whichever comes first.
    private var drained: CheckedContinuation<Void, Never>?

    private struct OpenRequest {
        var id: JSONValue
        var method: String
    }

    public init(configuration: Configuration, backend: any Backend, output: ACPOutput, logger: Logger) {
        self.init(configuration: configuration, backend: backend, output: output, logger: logger,
                  sleep: { try await Task.sleep(for: $0) })
    }

    init(configuration: Configuration, backend: any Backend, output: ACPOutput, logger: Logger,
         sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.configuration = configuration
        self.backend = backend
        self.output = output
        self.logger = logger
        self.sleep = sleep
    }

    /// Serves until `lines` ends (stdin's EOF), then answers the requests already read and
    /// returns; turns still running go on on the backend.
    public func serve(_ lines: AsyncStream<String>) async {
        for await line in lines {
            if line.allSatisfy(\.isWhitespace) { continue }
            receive(line)
        }
        await stop()
    }

    /// stdin's EOF: the editor sends nothing more, but may still read (`printf … | tether acp`).
    /// What is in flight — requests, and the approvals and aborts they led to — may finish until
    /// `shutdownGrace` is over; then the rest is cancelled and its requests are answered with an
    /// error. Nothing is aborted: the contract asks none, and the editor may come back to the
    /// session (`session/load`).
    private func stop() async {
        logger.debug("stdin closed; finishing what was asked", metadata: ["running": "\(tasks.count)"])
        if !tasks.isEmpty {
            let grace = configuration.shutdownGrace
            let deadline = Task {
                try? await Task.sleep(for: grace)
                self.endDrain()
            }
            await withCheckedContinuation { drained = $0 }
            deadline.cancel()
        }
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
        for (_, request) in unanswered.sorted(by: { $0.key < $1.key }) {
            logger.warning("\(request.method) did not finish in time; answering it with an error")
            output.send(.errorResponse(id: request.id, error: Self.stopping(request.method)))
        }
        unanswered.removeAll()
    }

    private func endDrain() {
        drained?.resume()
        drained = nil
    }

    /// One line of input.
    func receive(_ line: String) {
        switch JSONRPCMessage.parse(line: line) {
        case .invalid(let id, let error):
            logger.warning("bad input line: \(error.message)")
            output.send(.errorResponse(id: id, error: error))
        case .message(.request(let id, let method, let params)):
            let params = params?.object ?? [:]
            if method == "session/prompt" {
                // The run is recorded now, before the prompt's task runs: a `session/cancel` on
                // the very next line must find it.
                let start = Result { try beginPrompt(params) }
                answerInTask(id: id, method: method) { try await self.prompt(start.get()) }
            } else {
                answerInTask(id: id, method: method) { try await self.dispatch(method, params) }
            }
        case .message(.notification(let method, let params)):
            notification(method, params?.object ?? [:])
        case .message(.response(let id, let result)):
            editorAnswered(id: id, answer: Self.permissionAnswer(result))
        case .message(.errorResponse(let id, let error)):
            logger.info("the editor answered request \(id.serialized) with error \(error.code): \(error.message)")
            editorAnswered(id: id, answer: .unreadable)
        }
    }

    /// Runs `body` as a task that EOF waits for, up to its deadline.
    @discardableResult
    func spawn(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        taskCounter += 1
        let key = taskCounter
        let task = Task {
            await body()
            self.taskFinished(key)
        }
        tasks[key] = task
        return task
    }

    private func taskFinished(_ key: Int) {
        tasks[key] = nil
        if tasks.isEmpty { endDrain() }
    }

    /// Answers request `id` with what `work` gives, in a task of its own.
    private func answerInTask(id: JSONValue, method: String, _ work: @escaping @Sendable () async throws -> JSONValue) {
        requestCounter += 1
        let request = requestCounter
        unanswered[request] = OpenRequest(id: id, method: method)
        spawn { await self.answer(request, by: work) }
    }

    private func answer(_ request: Int, by work: @Sendable () async throws -> JSONValue) async {
        let result: Result<JSONValue, any Error>
        do {
            result = .success(try await work())
        } catch {
            result = .failure(error)
        }
        // Past the EOF deadline, it was answered already.
        guard let open = unanswered.removeValue(forKey: request) else { return }
        switch result {
        case .success(let value): output.send(.response(id: open.id, result: value))
        case .failure(let error): output.send(.errorResponse(id: open.id, error: Self.rpcError(error, doing: open.method)))
        }
    }

    private func dispatch(_ method: String, _ params: JSONObject) async throws -> JSONValue {
        switch method {
        case "initialize": return initialize(params)
        case "session/new": return try await newSession(params)
        case "session/load": return try await loadSession(params)
        case "session/list": return try await listSessions(params)
        default: throw JSONRPCError.methodNotFound(method)
        }
    }

    private func notification(_ method: String, _ params: JSONObject) {
        switch method {
        case "session/cancel":
            guard let session = params["sessionId"]?.string else {
                logger.warning("session/cancel without a sessionId; ignored")
                return
            }
            cancel(session: session)
        default:
            // Notifications get no answer, not even "method not found" (JSON-RPC 2.0 §4.1).
            logger.debug("ignoring notification \(method)")
        }
    }

    // MARK: Output

    func notify(_ session: String, _ update: JSONObject) {
        output.send(.notification(method: "session/update",
                                  params: ["sessionId": .string(session), "update": .object(update)]))
    }

    func request(_ method: String, params: JSONValue) -> JSONValue {
        nextRequestID += 1
        let id = JSONValue.int(nextRequestID)
        output.send(.request(id: id, method: method, params: params))
        return id
    }

    /// The answer to a request still running at the EOF deadline.
    static func stopping(_ method: String) -> JSONRPCError {
        let turn = method == "session/prompt" ? "; the turn goes on on the backend" : ""
        return JSONRPCError(code: JSONRPCError.internalErrorCode,
                            message: "\(method) did not finish before tether acp stopped (stdin closed)\(turn)")
    }

    /// Any failure as a JSON-RPC error that says what failed and what to do.
    static func rpcError(_ error: any Error, doing what: String) -> JSONRPCError {
        switch error {
        case let error as JSONRPCError: return error
        case let error as TetherError: return .backend(error, doing: what)
        case is CancellationError:
            return JSONRPCError(code: JSONRPCError.internalErrorCode, message: "\(what) was cancelled: tether acp is stopping")
        default:
            return JSONRPCError(code: JSONRPCError.internalErrorCode,
                                message: "\(what) failed: \(error) — run `tether check` for this profile to see whether the backend is reachable")
        }
    }
}
