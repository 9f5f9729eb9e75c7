import Foundation

extension CodexMonitorSimulator {
    /// A method's outcome: the response body, and work that must follow the response on the wire
    /// (in order mode a turn's events come after the response that started it).
    struct Reply: Sendable {
        enum Body: Sendable {
            case result(JSON)
            case error(String)
        }

        var body: Body
        var afterResponse: (@Sendable () async -> Void)?

        static func result(_ value: JSON, then: (@Sendable () async -> Void)? = nil) -> Reply {
            Reply(body: .result(value), afterResponse: then)
        }

        static func error(_ message: String) -> Reply {
            Reply(body: .error(message))
        }

        static var ok: Reply {
            .result(["ok": true])
        }
    }

    /// A parameter error, with the daemon's wording (§1.2).
    struct ParamError: Error {
        var message: String
    }

    // MARK: - Method table

    func dispatch(_ request: Wire.Request) async -> Reply {
        do {
            return try await perform(request.method, request.params)
        } catch let error as ParamError {
            return .error(error.message)
        } catch {
            return .error("\(error)")
        }
    }

    private func perform(_ method: String, _ params: JSON) async throws -> Reply {
        if options.missingMethods.contains(method) { return .error("unknown method: \(method)") }
        if let relay, let reply = try await relay.perform(method, params) { return reply }
        switch method {
        case "ping":
            return .ok
        case "daemon_info":
            return .result([
                "name": "codex-monitor-daemon", "version": "0.0.0-sim", "pid": .int(Int(ProcessInfo.processInfo.processIdentifier)),
                "mode": "tcp", "binaryPath": "/usr/local/bin/codex-monitor-daemon",
            ])
        case "list_workspaces":
            return .result(.array(world.workspaces.map(AppServer.workspaceInfo)))
        case "connect_workspace":
            return try connectWorkspace(params)
        case "list_threads":
            return try listThreads(params)
        case "start_thread":
            return try startThread(params)
        case "resume_thread":
            return try resumeThread(params)
        case "read_thread":
            return try readThread(params)
        case "archive_thread":
            return try archiveThread(params)
        case "set_thread_name":
            return try setThreadName(params)
        case "send_user_message":
            return try await sendUserMessage(params)
        case "turn_interrupt":
            return try await turnInterrupt(params)
        case "respond_to_server_request":
            return try await respondToServerRequest(params)
        case "remember_approval_rule":
            _ = try session(params)
            guard let command = params["command"]?.arrayValue?.compactMap(\.stringValue), !command.isEmpty else {
                throw ParamError(message: "missing or invalid `command`")
            }
            return .result(["ok": true, "rulesPath": "/home/dev/.codex/rules/default.rules"])
        case "thread_live_subscribe", "thread_live_unsubscribe":
            return try liveSubscription(method, params)
        case "model_list":
            let workspace = try session(params)
            return raw(workspace, "model/list", [:], AppServer.modelList())
        case "account_rate_limits":
            let workspace = try session(params)
            return raw(workspace, "account/rateLimits/read", .null, AppServer.rateLimits())
        case "terminal_open", "terminal_write", "terminal_resize", "terminal_close":
            return try terminal(method, params)
        default:
            // Also `auth` once authenticated, or on an `--insecure-no-auth` daemon (§1.3).
            return .error("unknown method: \(method)")
        }
    }

    // MARK: - Parameters

    private func string(_ params: JSON, _ key: String) throws -> String {
        guard case .object = params else { throw ParamError(message: "missing `\(key)`") }
        guard let value = params[key]?.stringValue else { throw ParamError(message: "missing or invalid `\(key)`") }
        return value
    }

    private func optionalString(_ params: JSON, _ key: String) -> String? {
        params[key]?.stringValue
    }

    /// The workspace's app-server session: every codex method needs one.
    private func session(_ params: JSON) throws -> Workspace {
        let id = try string(params, "workspaceId")
        guard let workspace = world.session(id) else { throw ParamError(message: "workspace not connected") }
        return workspace
    }

    /// Forwards a request to app-server and returns its response whole (§1.5).
    private func raw(_ workspace: Workspace, _ method: String, _ params: JSON, _ result: JSON,
                     then: (@Sendable () async -> Void)? = nil) -> Reply {
        let inner = forward(workspace, method, params)
        return .result(Wire.raw(innerID: inner, result: result), then: then)
    }

    private func rawError(_ workspace: Workspace, _ method: String, _ params: JSON, _ message: String) -> Reply {
        let inner = forward(workspace, method, params)
        return .result(Wire.rawError(innerID: inner, message: message))
    }

    private func forward(_ workspace: Workspace, _ method: String, _ params: JSON) -> Int {
        let inner = world.nextInnerID()
        log(["id": .int(inner), "method": .string(method), "params": params], workspaceID: workspace.id)
        return inner
    }

    // MARK: - Workspaces

    private func connectWorkspace(_ params: JSON) throws -> Reply {
        let id = try string(params, "id")
        switch world.connect(id) {
        case .notFound:
            return .error("workspace not found")
        case .spawned:
            // A new app-server session initialised: the daemon announces it before answering.
            log(["id": 0, "method": "initialize", "params": [
                "clientInfo": ["name": "codex_monitor", "title": "Codex Monitor", "version": "daemon-0.0.0-sim"],
                "capabilities": ["experimentalApi": true],
            ]], workspaceID: id)
            log(["method": "initialized"], workspaceID: id)
            broadcast.appServerEvent(workspaceID: id, message: AppServer.codexConnected(workspaceID: id))
            return .ok
        case .joined, .alreadyConnected:
            return .ok
        }
    }

    // MARK: - Threads

    private func listThreads(_ params: JSON) throws -> Reply {
        let workspace = try session(params)
        let cursor = optionalString(params, "cursor")
        let limit = params["limit"]?.intValue
        let sortKey = optionalString(params, "sortKey")
        let forwarded: JSON = [
            "cursor": cursor.map(JSON.string) ?? .null, "limit": limit.map(JSON.int) ?? .null,
            "sortKey": sortKey.map(JSON.string) ?? .null,
            "sourceKinds": ["cli", "vscode", "appServer", "subAgentReview", "subAgentCompact", "subAgentThreadSpawn", "unknown"],
        ]
        // Not filtered by cwd: every thread app-server knows, whichever workspace asked (§2.2).
        let all = world.listThreads(sortKey: sortKey)
        let offset = cursor.flatMap(Int.init) ?? 0
        let pageSize = max(1, limit ?? 25)
        let page = Array(all.dropFirst(offset).prefix(pageSize))
        let next = offset + page.count < all.count ? JSON.string(String(offset + page.count)) : .null
        let data = page.map { AppServer.thread($0, status: world.status(of: $0.id), includeTurns: false) }
        return raw(workspace, "thread/list", forwarded, ["data": .array(data), "nextCursor": next])
    }

    private func startThread(_ params: JSON) throws -> Reply {
        let workspace = try session(params)
        let forwarded: JSON = ["cwd": .string(workspace.path), "approvalPolicy": "on-request"]
        let inner = forward(workspace, "thread/start", forwarded)
        let record = world.createThread(in: workspace)
        let thread = AppServer.thread(record, status: world.status(of: record.id), includeTurns: true)
        // As in the notes' transcript, `thread/started` precedes the response.
        emit(AppServer.threadStarted(thread), workspaceID: workspace.id)
        return .result(Wire.raw(innerID: inner, result: AppServer.threadResponse(thread: thread, cwd: workspace.path)))
    }

    private func resumeThread(_ params: JSON) throws -> Reply {
        let workspace = try session(params)
        let threadID = try string(params, "threadId")
        let forwarded: JSON = ["threadId": .string(threadID)]
        guard let record = world.loadThread(threadID, workspaceID: workspace.id) else {
            return rawError(workspace, "thread/resume", forwarded, "thread not found")
        }
        let thread = AppServer.thread(record, status: world.status(of: threadID), includeTurns: true)
        // Current codex re-sends the thread's unanswered approval requests to the resuming client.
        let pending = options.codex == .current ? world.pendingApprovals(threadID: threadID) : []
        return raw(workspace, "thread/resume", forwarded, AppServer.threadResponse(thread: thread, cwd: record.cwd)) { [self] in
            for approval in pending {
                broadcast.appServerEvent(workspaceID: approval.workspaceID, message: approval.message)
            }
        }
    }

    private func readThread(_ params: JSON) throws -> Reply {
        let workspace = try session(params)
        let threadID = try string(params, "threadId")
        let forwarded: JSON = ["threadId": .string(threadID)]
        guard let record = world.thread(threadID) else {
            return rawError(workspace, "thread/read", forwarded, "thread not found")
        }
        // No `includeTurns`, so `turns` is empty (§2.2).
        let thread = AppServer.thread(record, status: world.status(of: threadID), includeTurns: false)
        return raw(workspace, "thread/read", forwarded, ["thread": thread])
    }

    private func archiveThread(_ params: JSON) throws -> Reply {
        let workspace = try session(params)
        let threadID = try string(params, "threadId")
        let forwarded: JSON = ["threadId": .string(threadID)]
        guard world.update(threadID, { $0.archived = true }) != nil else {
            return rawError(workspace, "thread/archive", forwarded, "thread not found")
        }
        return raw(workspace, "thread/archive", forwarded, [:]) { [self] in
            emit(AppServer.message("thread/archived", ["threadId": .string(threadID)]), workspaceID: workspace.id)
        }
    }

    private func setThreadName(_ params: JSON) throws -> Reply {
        let workspace = try session(params)
        let threadID = try string(params, "threadId")
        let name = try string(params, "name")
        let forwarded: JSON = ["threadId": .string(threadID), "name": .string(name)]
        guard world.update(threadID, { $0.name = name }) != nil else {
            return rawError(workspace, "thread/name/set", forwarded, "thread not found")
        }
        return raw(workspace, "thread/name/set", forwarded, [:]) { [self] in
            emit(AppServer.message("thread/name/updated", ["threadId": .string(threadID), "threadName": .string(name)]),
                 workspaceID: workspace.id)
        }
    }

    private func liveSubscription(_ method: String, _ params: JSON) throws -> Reply {
        let workspace = try session(params)
        let threadID = try string(params, "threadId")
        if method == "thread_live_subscribe" {
            let subscription = "\(workspace.id):\(threadID)"
            emit(AppServer.message("thread/live_attached", [
                "workspaceId": .string(workspace.id), "threadId": .string(threadID), "subscriptionId": .string(subscription),
            ]), workspaceID: workspace.id)
            return .result(["subscriptionId": .string(subscription), "state": "live"])
        }
        emit(AppServer.message("thread/live_detached", [
            "workspaceId": .string(workspace.id), "threadId": .string(threadID), "reason": "manual",
        ]), workspaceID: workspace.id)
        return .ok
    }

    // MARK: - Turns

    private func sendUserMessage(_ params: JSON) async throws -> Reply {
        let workspace = try session(params)
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

        let accessMode = optionalString(params, "accessMode") ?? "current"
        let sandbox: JSON
        let approvalPolicy: String
        switch accessMode {
        case "full-access":
            sandbox = ["type": "dangerFullAccess"]
            approvalPolicy = "never"
        case "read-only":
            sandbox = ["type": "readOnly"]
            approvalPolicy = "on-request"
        default:
            sandbox = ["type": "workspaceWrite", "writableRoots": [.string(workspace.path)], "networkAccess": true]
            approvalPolicy = "on-request"
        }
        var forwarded: JSON = [
            "threadId": .string(threadID), "input": .array(input), "cwd": .string(workspace.path),
            "approvalPolicy": .string(approvalPolicy), "sandboxPolicy": sandbox,
            "model": params["model"] ?? .null, "effort": params["effort"] ?? .null,
        ]
        if let tier = params["serviceTier"] { forwarded["serviceTier"] = tier }
        if let mode = params["collaborationMode"], mode != .null { forwarded["collaborationMode"] = mode }

        let turnID: String
        switch world.beginTurn(threadID: threadID, workspaceID: workspace.id, prompt: text) {
        case .failure(.threadNotFound):
            return rawError(workspace, "turn/start", forwarded, "thread not found")
        case .failure(.turnInProgress):
            return rawError(workspace, "turn/start", forwarded, "turn already in progress")
        case .success(let id):
            turnID = id
        }
        let inner = forward(workspace, "turn/start", forwarded)
        let result = Wire.raw(innerID: inner, result: ["turn": AppServer.startedTurn(id: turnID)])
        let responseQueued = options.reorderResponses ? CodexMonitorSignal() : nil
        let turn = TurnScript(
            simulator: self, workspace: workspace, threadID: threadID, turnID: turnID, prompt: text,
            scenario: options.scenario ?? CodexMonitorScenario.forPrompt(text), approvalPolicy: approvalPolicy,
            responseQueued: responseQueued
        )
        guard let responseQueued else {
            return .result(result) { turn.launch() }
        }
        // Reordered: the response trails the turn's first events.
        turn.launch()
        await turn.firstEvents.wait()
        return .result(result) { responseQueued.fire() }
    }

    private func turnInterrupt(_ params: JSON) async throws -> Reply {
        let workspace = try session(params)
        let threadID = try string(params, "threadId")
        let turnID = try string(params, "turnId")
        let forwarded: JSON = ["threadId": .string(threadID), "turnId": .string(turnID)]
        guard world.finishedSignal(threadID: threadID, turnID: turnID) != nil else {
            return rawError(workspace, "turn/interrupt", forwarded, "no active turn")
        }
        guard options.reorderResponses else {
            return raw(workspace, "turn/interrupt", forwarded, [:]) { [world] in
                _ = world.interrupt(threadID: threadID, turnID: turnID)
            }
        }
        await world.interrupt(threadID: threadID, turnID: turnID)?.wait()
        return raw(workspace, "turn/interrupt", forwarded, [:])
    }

    private func respondToServerRequest(_ params: JSON) async throws -> Reply {
        let workspace = try session(params)
        let requestID: JSON
        switch params["requestId"] {
        case .some(.int(let value)): requestID = .int(value)
        case .some(.string(let value)): requestID = .string(value)
        default: throw ParamError(message: "missing requestId")
        }
        guard let result = params["result"] else { throw ParamError(message: "missing `result`") }
        // Written verbatim to app-server's stdin; no validation (§4.2).
        log(["id": requestID, "result": result], workspaceID: workspace.id)
        guard options.reorderResponses else {
            return .result(["ok": true]) { [world] in
                _ = world.deliver(requestID: requestID, result: result)
            }
        }
        guard let approval = world.deliver(requestID: requestID, result: result) else { return .ok }
        await approval.handled.wait()
        return .ok.then { approval.replyQueued.fire() }
    }

    // MARK: - Terminals (fork daemon; `terminal-output` / `terminal-exit` notifications)

    private func terminal(_ method: String, _ params: JSON) throws -> Reply {
        let workspaceID = try string(params, "workspaceId")
        let terminalID = try string(params, "terminalId")
        guard world.workspace(workspaceID) != nil else { return .error("workspace not found") }
        let ids: JSON = ["workspaceId": .string(workspaceID), "terminalId": .string(terminalID)]
        switch method {
        case "terminal_open":
            return .result(["id": .string(terminalID)]) { [broadcast] in
                broadcast.notify("terminal-output", Self.terminalOutput(ids, "$ "))
            }
        case "terminal_write":
            let data = try string(params, "data")
            return .ok.then { [broadcast] in
                broadcast.notify("terminal-output", Self.terminalOutput(ids, data.replacingOccurrences(of: "\n", with: "\r\n")))
                if data.trimmingCharacters(in: .whitespacesAndNewlines) == "exit" {
                    broadcast.notify("terminal-exit", ids)
                }
            }
        case "terminal_close":
            return .ok.then { [broadcast] in broadcast.notify("terminal-exit", ids) }
        default:
            return .ok
        }
    }

    static func terminalOutput(_ ids: JSON, _ data: String) -> JSON {
        var params = ids
        params["data"] = .string(data)
        return params
    }

    /// Relays an app-server notification, stamped as the configured codex stamps it.
    func emit(_ message: JSON, workspaceID: String, tag: Broadcast.EventTag = .plain) {
        var stamped = message
        if options.codex == .current, stamped["id"] == nil {
            stamped["emittedAtMs"] = .int(AppServer.nowMs)
        }
        broadcast.appServerEvent(workspaceID: workspaceID, message: stamped, tag: tag)
    }
}

extension CodexMonitorSimulator.Reply {
    func then(_ work: @escaping @Sendable () async -> Void) -> Self {
        var copy = self
        copy.afterResponse = work
        return copy
    }
}
