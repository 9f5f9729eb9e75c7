import FlyingFox
import Foundation

/// Request handling of the simulated OpenCode server (notes §2, §4, §8): one value per request.
struct OpenCodeRoutes: Sendable {
    let options: OpenCodeSimulator.Options
    let state: OpenCodeState
    let streams: StreamRegistry
    let log: RequestLog

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let body = (try? await request.bodyData) ?? Data()
        let recorded = RecordedRequest(request, body: body)
        log.append(recorded)
        guard OpenCodeAuth(username: options.username, password: options.password).permits(recorded) else {
            return OpenCodeAuth.refusal
        }
        let path = request.path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        return await route(recorded.method, path, recorded)
    }

    // MARK: Routing

    private func route(_ method: String, _ path: [String], _ request: RecordedRequest) async -> HTTPResponse {
        /// The wildcards (`*`) of `pattern` when `method` and `path` match it.
        func on(_ expected: String, _ pattern: String...) -> [String]? {
            guard method == expected, path.count == pattern.count else { return nil }
            var captures: [String] = []
            for (component, part) in zip(path, pattern) {
                if part == "*" {
                    captures.append(component)
                } else if component != part {
                    return nil
                }
            }
            return captures
        }

        if on("GET", "global", "health") != nil {
            return SSEResponse.json(["healthy": true, "version": .string(options.version)])
        }
        if on("GET", "global", "event") != nil {
            guard options.serveGlobalEvent else { return SSEResponse.text("404 Not Found", status: .notFound) }
            return await eventStream(.global)
        }
        if on("GET", "event") != nil {
            return await eventStream(.instance(directory: instanceDirectory(request)))
        }
        if on("GET", "session") != nil {
            return SSEResponse.json(.array(await state.sessionList(directory: directoryFilter(request))))
        }
        if on("POST", "session") != nil {
            return await createSession(request)
        }
        if on("GET", "session", "status") != nil {
            return SSEResponse.json(await state.statusMap(directory: directoryFilter(request)))
        }
        if let id = on("GET", "session", "*")?.first {
            guard let session = await state.sessions[id] else { return sessionNotFound(id) }
            return SSEResponse.json(session)
        }
        if let id = on("PATCH", "session", "*")?.first {
            let update = try? JSONDecoder().decode(OpenCodeRequestBodies.UpdateSession.self, from: request.body)
            guard let session = await state.updateSession(id, title: update?.title) else { return sessionNotFound(id) }
            return SSEResponse.json(session)
        }
        if let id = on("DELETE", "session", "*")?.first {
            guard await state.deleteSession(id) else { return sessionNotFound(id) }
            return SSEResponse.json(true)
        }
        if let id = on("GET", "session", "*", "message")?.first {
            guard await state.sessions[id] != nil else { return sessionNotFound(id) }
            let limit = request.queryValue("limit").flatMap { Int($0) }
            return SSEResponse.json(.array(await state.messageList(sessionID: id, limit: limit)))
        }
        if let ids = on("GET", "session", "*", "message", "*") {
            let (id, messageID) = (ids[0], ids[1])
            guard await state.sessions[id] != nil else { return sessionNotFound(id) }
            guard let message = await state.message(sessionID: id, messageID: messageID) else {
                return SSEResponse.json(OpenCodeFixtures.notFound("Message not found: \(messageID)"), status: .notFound)
            }
            return SSEResponse.json(message)
        }
        if let id = on("POST", "session", "*", "prompt_async")?.first {
            return await promptAsync(id, request)
        }
        if let id = on("POST", "session", "*", "abort")?.first {
            guard await state.abort(id) else { return sessionNotFound(id) }
            return SSEResponse.json(true)
        }
        if let id = on("GET", "session", "*", "todo")?.first {
            guard await state.sessions[id] != nil else { return sessionNotFound(id) }
            return SSEResponse.json(await state.todoList(sessionID: id))
        }
        if let ids = on("POST", "session", "*", "permissions", "*") {
            return await legacyPermissionResponse(sessionID: ids[0], requestID: ids[1], request)
        }
        if options.legacy, path.first == "permission" || path.first == "question" {
            // The Hono server had neither list nor the newer reply routes (notes §0).
            return SSEResponse.text("404 Not Found", status: .notFound)
        }
        if on("GET", "permission") != nil {
            if options.faults.failEverySecondPermissionList,
               log.all.count(where: { $0.method == "GET" && $0.path == "/permission" }).isMultiple(of: 2) {
                return SSEResponse.json(["name": "UnknownError", "data": ["message": "fault: server going down"]],
                                        status: SSEResponse.status(503))
            }
            return SSEResponse.json(.array(await state.permissionList(directory: directoryFilter(request))))
        }
        if let requestID = on("POST", "permission", "*", "reply")?.first {
            return await permissionReply(requestID, request)
        }
        if on("GET", "question") != nil {
            return SSEResponse.json(.array(await state.questionList(directory: directoryFilter(request))))
        }
        if let requestID = on("POST", "question", "*", "reply")?.first {
            return await questionReply(requestID, request)
        }
        if let requestID = on("POST", "question", "*", "reject")?.first {
            return questionResult(await state.replyQuestion(requestID, answers: nil), requestID)
        }
        if on("GET", "config", "providers") != nil {
            return SSEResponse.json(OpenCodeFixtures.providers)
        }
        if on("GET", "provider") != nil {
            let providers = OpenCodeFixtures.providers
            return SSEResponse.json([
                "all": providers["providers"] ?? [],
                "default": providers["default"] ?? [:],
                "connected": ["anthropic"],
            ])
        }
        if on("GET", "agent") != nil {
            return SSEResponse.json(OpenCodeFixtures.agents)
        }
        if on("GET", "path") != nil {
            let directory = instanceDirectory(request)
            return SSEResponse.json([
                "home": "/home/dev", "state": "/home/dev/.local/state/opencode",
                "config": "/home/dev/.config/opencode", "worktree": .string(directory), "directory": .string(directory),
            ])
        }
        if on("GET", "project", "current") != nil {
            let directory = instanceDirectory(request)
            let now = epochMilliseconds()
            return SSEResponse.json([
                "id": .string(OpenCodeFixtures.projectID(for: directory)), "worktree": .string(directory), "vcs": "git",
                "time": ["created": .int(now - 86_400_000), "updated": .int(now)], "sandboxes": [],
            ])
        }
        if on("POST", "instance", "dispose") != nil {
            await state.disposeInstance(instanceDirectory(request))
            return SSEResponse.json(true)
        }
        return SSEResponse.text("404 Not Found", status: .notFound)
    }

    // MARK: Directories

    /// Notes §1: `?directory=` → `x-opencode-directory` → the server's own directory.
    private func instanceDirectory(_ request: RecordedRequest) -> String {
        directoryFilter(request) ?? options.directory
    }

    /// The directory a list is filtered by, when the client named one.
    private func directoryFilter(_ request: RecordedRequest) -> String? {
        if let directory = request.queryValue("directory"), !directory.isEmpty { return directory }
        if let directory = request.header("x-opencode-directory"), !directory.isEmpty {
            return directory.removingPercentEncoding ?? directory
        }
        return nil
    }

    // MARK: Handlers

    private func eventStream(_ endpoint: OpenCodeEventSubscriber.Endpoint) async -> HTTPResponse {
        let body = options.faults.dripBytes
            ? streams.makeBody(maxChunk: 1, chunkDelay: options.faults.dripDelay)
            : streams.makeBody()
        await state.subscribe(endpoint, body: body)
        return SSEResponse.stream(body, headers: [
            ("Cache-Control", "no-cache, no-transform"),
            ("X-Accel-Buffering", "no"),
            ("X-Content-Type-Options", "nosniff"),
        ])
    }

    private func createSession(_ request: RecordedRequest) async -> HTTPResponse {
        var input = OpenCodeRequestBodies.CreateSession()
        if !request.body.isEmpty {
            guard let decoded = try? JSONDecoder().decode(OpenCodeRequestBodies.CreateSession.self, from: request.body) else {
                return SSEResponse.json(OpenCodeFixtures.badRequest("Invalid session.create body"), status: .badRequest)
            }
            input = decoded
        }
        let session = await state.createSession(
            title: input.title, parentID: input.parentID, directory: instanceDirectory(request)
        )
        return SSEResponse.json(session)
    }

    private func promptAsync(_ sessionID: String, _ request: RecordedRequest) async -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(OpenCodeRequestBodies.Prompt.self, from: request.body) else {
            return SSEResponse.json(OpenCodeFixtures.badRequest("Invalid prompt body: expected {parts:[…]}"), status: .badRequest)
        }
        var prompt = OpenCodePrompt(text: body.parts.compactMap(\.text).joined(separator: "\n"))
        if let model = body.model {
            prompt.model = OpenCodeModel(providerID: model.providerID, modelID: model.modelID)
        }
        if let agent = body.agent { prompt.agent = agent }
        let failure = options.faults.failFirstPrompt.flatMap { failure in
            log.all.count(where: { $0.method == "POST" && $0.path.hasSuffix("/prompt_async") }) == 1 ? failure : nil
        }
        let down = SSEResponse.json(["name": "UnknownError", "data": ["message": "fault: server going down"]],
                                    status: SSEResponse.status(503))
        if failure == .beforeStoring { return down }
        guard await state.prompt(sessionID, prompt) else { return sessionNotFound(sessionID) }
        if failure == .afterStoring { return down }
        return SSEResponse.empty(.noContent)
    }

    private func permissionReply(_ requestID: String, _ request: RecordedRequest) async -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(OpenCodeRequestBodies.PermissionReply.self, from: request.body),
              ["once", "always", "reject"].contains(body.reply) else {
            return SSEResponse.json(OpenCodeFixtures.badRequest("reply must be once, always or reject"), status: .badRequest)
        }
        return permissionResult(await state.replyPermission(requestID, reply: body.reply), requestID)
    }

    private func legacyPermissionResponse(sessionID: String, requestID: String, _ request: RecordedRequest) async -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(OpenCodeRequestBodies.LegacyPermissionResponse.self, from: request.body),
              ["once", "always", "reject"].contains(body.response) else {
            return SSEResponse.json(OpenCodeFixtures.badRequest("response must be once, always or reject"), status: .badRequest)
        }
        return permissionResult(await state.replyPermission(requestID, reply: body.response, sessionID: sessionID), requestID)
    }

    private func permissionResult(_ outcome: OpenCodeState.ReplyOutcome, _ requestID: String) -> HTTPResponse {
        switch outcome {
        case .done:
            return SSEResponse.json(true)
        case .notFound:
            return SSEResponse.json(OpenCodeFixtures.taggedNotFound(
                "PermissionNotFoundError", requestID: requestID, message: "Permission request not found: \(requestID)"
            ), status: .notFound)
        }
    }

    private func questionReply(_ requestID: String, _ request: RecordedRequest) async -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(OpenCodeRequestBodies.QuestionReply.self, from: request.body) else {
            return SSEResponse.json(OpenCodeFixtures.badRequest("answers must be string[][]"), status: .badRequest)
        }
        return questionResult(await state.replyQuestion(requestID, answers: body.answers), requestID)
    }

    private func questionResult(_ outcome: OpenCodeState.ReplyOutcome, _ requestID: String) -> HTTPResponse {
        switch outcome {
        case .done:
            return SSEResponse.json(true)
        case .notFound:
            return SSEResponse.json(OpenCodeFixtures.taggedNotFound(
                "QuestionNotFoundError", requestID: requestID, message: "Question request not found: \(requestID)"
            ), status: .notFound)
        }
    }

    private func sessionNotFound(_ id: String) -> HTTPResponse {
        SSEResponse.json(OpenCodeFixtures.notFound("Session not found: \(id)"), status: .notFound)
    }
}
