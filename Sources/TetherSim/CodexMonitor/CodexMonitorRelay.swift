import Foundation
import Logging

extension CodexMonitorSimulator {
    /// Relay mode: instead of scripting turns, the daemon spawns a real `codex app-server` per
    /// connected workspace and forwards the codex methods to it as upstream does (notes §1.4, §2.2),
    /// broadcasting everything app-server sends unprompted as `app-server-event`.
    public struct RelayOptions: Sendable, Equatable {
        /// The `codex` executable.
        public var codexPath: String
        /// `CODEX_HOME` for the child (holds `config.toml`); nil inherits the environment's.
        public var codexHome: String?
        /// The child's working directory; nil ⇒ the workspace's path.
        public var workingDirectory: String?

        public init(codexPath: String, codexHome: String? = nil, workingDirectory: String? = nil) {
            self.codexPath = codexPath
            self.codexHome = codexHome
            self.workingDirectory = workingDirectory
        }
    }
}

/// The relay's method table and its app-server children.
final class CodexMonitorRelay: Sendable {
    typealias JSON = OrderedJSON
    typealias Reply = CodexMonitorSimulator.Reply
    typealias ParamError = CodexMonitorSimulator.ParamError

    let options: CodexMonitorSimulator.RelayOptions
    let world: CodexMonitorSimulator.World
    let broadcast: CodexMonitorSimulator.Broadcast
    let logger: Logger
    private let children = Locked<[String: CodexAppServerChild]>([:])

    init(options: CodexMonitorSimulator.RelayOptions, world: CodexMonitorSimulator.World,
         broadcast: CodexMonitorSimulator.Broadcast, logger: Logger) {
        self.options = options
        self.world = world
        self.broadcast = broadcast
        self.logger = logger
    }

    /// Handles the methods the relay forwards; nil leaves the method to the simulator's own table.
    func perform(_ method: String, _ params: JSON) async throws -> Reply? {
        switch method {
        case "connect_workspace":
            return try await connect(params)
        case "list_threads":
            let child = try session(params)
            var forwarded: JSON = [
                "cursor": params["cursor"] ?? .null, "limit": params["limit"] ?? .null, "sortKey": params["sortKey"] ?? .null,
            ]
            forwarded["sourceKinds"] = ["cli", "vscode", "appServer", "subAgentReview", "subAgentCompact", "subAgentThreadSpawn", "unknown"]
            return try await raw(child, "thread/list", forwarded)
        case "start_thread":
            let child = try session(params)
            return try await raw(child, "thread/start", ["cwd": .string(child.workspacePath), "approvalPolicy": "on-request"])
        case "resume_thread":
            let child = try session(params)
            return try await raw(child, "thread/resume", ["threadId": .string(try string(params, "threadId"))])
        case "read_thread":
            let child = try session(params)
            return try await raw(child, "thread/read", ["threadId": .string(try string(params, "threadId"))])
        case "archive_thread":
            let child = try session(params)
            return try await raw(child, "thread/archive", ["threadId": .string(try string(params, "threadId"))])
        case "set_thread_name":
            let child = try session(params)
            return try await raw(child, "thread/name/set", [
                "threadId": .string(try string(params, "threadId")), "name": .string(try string(params, "name")),
            ])
        case "send_user_message":
            return try await sendUserMessage(params)
        case "turn_interrupt":
            let child = try session(params)
            return try await raw(child, "turn/interrupt", [
                "threadId": .string(try string(params, "threadId")), "turnId": .string(try string(params, "turnId")),
            ])
        case "respond_to_server_request":
            let child = try session(params)
            let requestID: JSON
            switch params["requestId"] {
            case .some(.int(let value)): requestID = .int(value)
            case .some(.string(let value)): requestID = .string(value)
            default: throw ParamError(message: "missing requestId")
            }
            guard let result = params["result"] else { throw ParamError(message: "missing `result`") }
            child.write(["id": requestID, "result": result])
            return .ok
        case "model_list":
            return try await raw(try session(params), "model/list", [:])
        case "account_rate_limits":
            return try await raw(try session(params), "account/rateLimits/read", .null)
        default:
            return nil
        }
    }

    /// Terminates every child.
    func shutdown() {
        let all = children.withLock { children -> [CodexAppServerChild] in
            defer { children = [:] }
            return Array(children.values)
        }
        for child in all { child.terminate() }
    }

    // MARK: - Helpers

    private func string(_ params: JSON, _ key: String) throws -> String {
        guard case .object = params else { throw ParamError(message: "missing `\(key)`") }
        guard let value = params[key]?.stringValue else { throw ParamError(message: "missing or invalid `\(key)`") }
        return value
    }

    private func session(_ params: JSON) throws -> CodexAppServerChild {
        let id = try string(params, "workspaceId")
        guard let child = children.withLock({ $0[id] }), child.isRunning else {
            throw ParamError(message: "workspace not connected")
        }
        return child
    }

    /// The app-server response, whole, as the daemon's result (§1.5).
    private func raw(_ child: CodexAppServerChild, _ method: String, _ params: JSON) async throws -> Reply {
        switch await child.request(method, params) {
        case .success(let message): return .result(message)
        case .failure(let error): return .error(error.message)
        }
    }

    private func connect(_ params: JSON) async throws -> Reply {
        let id = try string(params, "id")
        guard let workspace = world.workspace(id) else { return .error("workspace not found") }
        if let existing = children.withLock({ $0[id] }), existing.isRunning { return .ok }
        let child: CodexAppServerChild
        do {
            child = try CodexAppServerChild(
                workspaceID: id, workspacePath: workspace.path, options: options, logger: logger
            ) { [broadcast] message in
                broadcast.appServerEvent(workspaceID: id, message: message)
            }
        } catch {
            return .error("Codex CLI not found. Install Codex and ensure codex is on your PATH. (\(error))")
        }
        let initialize: JSON = [
            "clientInfo": ["name": "codex_monitor", "title": "Codex Monitor", "version": "daemon-0.0.0-sim"],
            "capabilities": ["experimentalApi": true],
        ]
        switch await child.request("initialize", initialize, timeout: .seconds(30)) {
        case .success(let message) where message["error"] == nil:
            break
        default:
            child.terminate()
            return .error("Codex app-server did not respond to initialize. Check that `codex app-server` works in Terminal.")
        }
        child.write(["method": "initialized"])
        children.withLock { $0[id] = child }
        _ = world.connect(id)
        broadcast.appServerEvent(workspaceID: id, message: [
            "method": "codex/connected", "params": ["workspaceId": .string(id)],
        ])
        return .ok
    }

    private func sendUserMessage(_ params: JSON) async throws -> Reply {
        let child = try session(params)
        let threadID = try string(params, "threadId")
        let text = try string(params, "text").trimmingCharacters(in: .whitespacesAndNewlines)
        var input: [JSON] = []
        if !text.isEmpty { input.append(["type": "text", "text": .string(text)]) }
        for image in params["images"]?.arrayValue?.compactMap(\.stringValue) ?? [] {
            let isURL = image.hasPrefix("data:") || image.hasPrefix("http://") || image.hasPrefix("https://")
            input.append(isURL ? ["type": "image", "url": .string(image)] : ["type": "localImage", "path": .string(image)])
        }
        for mention in params["appMentions"]?.arrayValue ?? [] {
            if let name = mention["name"]?.stringValue, let path = mention["path"]?.stringValue {
                input.append(["type": "mention", "name": .string(name), "path": .string(path)])
            }
        }
        guard !input.isEmpty else { return .error("empty user message") }
        let path = child.workspacePath
        let sandbox: JSON
        let approvalPolicy: String
        switch params["accessMode"]?.stringValue ?? "current" {
        case "full-access":
            sandbox = ["type": "dangerFullAccess"]
            approvalPolicy = "never"
        case "read-only":
            sandbox = ["type": "readOnly"]
            approvalPolicy = "on-request"
        default:
            sandbox = ["type": "workspaceWrite", "writableRoots": [.string(path)], "networkAccess": true]
            approvalPolicy = "on-request"
        }
        var forwarded: JSON = [
            "threadId": .string(threadID), "input": .array(input), "cwd": .string(path),
            "approvalPolicy": .string(approvalPolicy), "sandboxPolicy": sandbox,
            "model": params["model"] ?? .null, "effort": params["effort"] ?? .null,
        ]
        if let tier = params["serviceTier"] { forwarded["serviceTier"] = tier }
        if let mode = params["collaborationMode"], mode != .null { forwarded["collaborationMode"] = mode }
        return try await raw(child, "turn/start", forwarded)
    }
}

/// One `codex app-server` child: newline JSON-RPC over its stdin/stdout. Its stdout is read on a
/// dedicated thread, never on the cooperative pool.
final class CodexAppServerChild: Sendable {
    typealias JSON = OrderedJSON

    struct RequestError: Error {
        var message: String
    }

    let workspaceID: String
    let workspacePath: String
    private let process: Process
    private let stdin: FileHandle
    private let writeLock = Locked(())
    private let state = Locked(State())
    private let logger: Logger

    private struct State {
        var nextID = 0
        var pending: [Int: CheckedContinuation<Result<JSON, RequestError>, Never>] = [:]
        var exited = false
    }

    init(workspaceID: String, workspacePath: String, options: CodexMonitorSimulator.RelayOptions, logger: Logger,
         onMessage: @escaping @Sendable (JSON) -> Void) throws {
        self.workspaceID = workspaceID
        self.workspacePath = workspacePath
        self.logger = logger
        let process = Process()
        process.executableURL = URL(fileURLWithPath: options.codexPath)
        process.arguments = ["app-server"]
        process.currentDirectoryURL = URL(fileURLWithPath: options.workingDirectory ?? workspacePath)
        var environment = ProcessInfo.processInfo.environment
        if let home = options.codexHome { environment["CODEX_HOME"] = home }
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        self.process = process
        stdin = input.fileHandleForWriting
        // A write to a child that has exited must fail with EPIPE, not kill the simulator.
        signal(SIGPIPE, SIG_IGN)
        try process.run()
        let reader = output.fileHandleForReading
        let thread = Thread { [self] in
            var buffer: [UInt8] = []
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                buffer.append(contentsOf: data)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = Array(buffer[..<newline])
                    buffer.removeSubrange(...newline)
                    guard let message = CodexMonitorJSONParser.parse(line) else { continue }
                    if message["method"] == nil, let id = message["id"]?.intValue,
                       message["result"] != nil || message["error"] != nil {
                        let waiter = state.withLock { $0.pending.removeValue(forKey: id) }
                        waiter?.resume(returning: .success(message))
                    } else {
                        onMessage(message)
                    }
                }
            }
            let waiters = state.withLock { state -> [CheckedContinuation<Result<JSON, RequestError>, Never>] in
                state.exited = true
                defer { state.pending = [:] }
                return Array(state.pending.values)
            }
            for waiter in waiters { waiter.resume(returning: .failure(RequestError(message: "request canceled"))) }
            logger.debug("codexmonitor relay: app-server exited", metadata: ["workspace": "\(workspaceID)"])
        }
        thread.name = "codex-app-server-\(workspaceID)"
        thread.start()
    }

    var isRunning: Bool {
        !state.withLock { $0.exited } && process.isRunning
    }

    /// Writes one JSON line to the child's stdin.
    func write(_ message: JSON) {
        let line = Data((message.serialized + "\n").utf8)
        writeLock.withLock { _ in
            do { try stdin.write(contentsOf: line) } catch {
                logger.debug("codexmonitor relay: write failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Sends a request and waits for the whole response message.
    func request(_ method: String, _ params: JSON, timeout: Duration = .seconds(300)) async -> Result<JSON, RequestError> {
        let id = state.withLock { state -> Int? in
            guard !state.exited else { return nil }
            defer { state.nextID += 1 }
            return state.nextID
        }
        guard let id else { return .failure(RequestError(message: "request canceled")) }
        let timer = Task { [state] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            let waiter = state.withLock { $0.pending.removeValue(forKey: id) }
            let seconds = timeout.components.seconds
            waiter?.resume(returning: .failure(RequestError(message: "request timed out after \(seconds) seconds")))
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let registered = state.withLock { state -> Bool in
                guard !state.exited else { return false }
                state.pending[id] = continuation
                return true
            }
            guard registered else {
                continuation.resume(returning: .failure(RequestError(message: "request canceled")))
                return
            }
            write(["id": .int(id), "method": .string(method), "params": params])
        }
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        try? stdin.close()
    }
}
