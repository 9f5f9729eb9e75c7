import TetherCore
import TetherStreaming

/// `initialize`, `session/new`, `session/load`, `session/list`.
extension ACPAgent {
    static let protocolVersion: Int64 = 1

    func initialize(_ params: JSONObject) -> JSONValue {
        let capabilities = backend.capabilities
        var session = JSONObject()
        if capabilities.contains(.sessions) { session["list"] = .object([:]) }
        return [
            "protocolVersion": .int(Self.protocolVersion),
            "agentCapabilities": [
                "loadSession": .bool(capabilities.contains(.history)),
                // Text only: the backends take a prompt's text. Embedded text resources and
                // resource links are folded into it.
                "promptCapabilities": ["image": false, "audio": false, "embeddedContext": true],
                "mcpCapabilities": ["http": false, "sse": false],
                "sessionCapabilities": .object(session),
            ],
            "agentInfo": [
                "name": "tether", "title": .string("Tether (\(configuration.profile), \(backend.kind.rawValue))"),
                "version": .string(configuration.version),
            ],
            // The profile holds the credentials: nothing for the editor to authenticate.
            "authMethods": [],
        ]
    }

    func newSession(_ params: JSONObject) async throws -> JSONValue {
        guard let cwd = params["cwd"]?.string else { throw JSONRPCError.invalidParams("session/new needs \"cwd\"") }
        try requireCapability(.createSession, "creating sessions")
        if let servers = params["mcpServers"]?.array, !servers.isEmpty {
            logger.warning("ignoring \(servers.count) MCP server(s) from the editor: the agent runs remotely and keeps its own")
        }
        // The cwd is a path on the agent's machine: it is passed on, never checked here.
        let directory = configuration.profilePinsDirectory ? nil : cwd
        let what = directory.map { "creating a session in \($0)" } ?? "creating a session in profile \(configuration.profile)'s directory"
        let created: Session
        do {
            created = try await backend.createSession(SessionCreateRequest(directory: directory))
        } catch {
            throw Self.rpcError(error, doing: what)
        }
        openSessions.insert(created.id)
        logger.info("session/new → \(created.id)")
        return ["sessionId": .string(created.id)]
    }

    /// Replays the session's history as `session/update`s (each message once), then answers.
    func loadSession(_ params: JSONObject) async throws -> JSONValue {
        guard let session = params["sessionId"]?.string else {
            throw JSONRPCError.invalidParams("session/load needs \"sessionId\"")
        }
        try requireCapability(.history, "loading a session's history")
        let events: [Event]
        do {
            // Some backends answer an unknown session's history with nothing (the Codex Worker's
            // thread events): ask for the session first, so a wrong id is an error, not a blank.
            _ = try await backend.session(id: session)
            events = try await backend.history(session: session, limit: nil)
        } catch {
            throw Self.rpcError(error, doing: "loading session \(session)")
        }
        openSessions.insert(session)
        var mapper = SessionUpdateMapper(session: session, mode: .replay)
        for event in events {
            for case .update(let update) in mapper.map(event) { notify(session, update) }
        }
        return [:]
    }

    func listSessions(_ params: JSONObject) async throws -> JSONValue {
        try requireCapability(.sessions, "listing sessions")
        let sessions: [Session]
        do {
            sessions = try await backend.listSessions(SessionListRequest())
        } catch {
            throw Self.rpcError(error, doing: "listing sessions")
        }
        let cwd = params["cwd"]?.string
        let infos: [JSONValue] = sessions.compactMap { session in
            if let cwd, let directory = session.directory, directory != cwd { return nil }
            // `cwd` is required and absolute: a session whose backend names no directory gets
            // the filter's cwd, else the root.
            var info: JSONObject = ["sessionId": .string(session.id), "cwd": .string(session.directory ?? cwd ?? "/")]
            if let title = session.title { info["title"] = .string(title) }
            if let updated = session.updatedAt ?? session.createdAt {
                info["updatedAt"] = .string(EventCodec.timestamp(milliseconds: updated))
            }
            return .object(info)
        }
        return ["sessions": .array(infos)]
    }

    func requireCapability(_ capability: BackendCapabilities, _ what: String) throws {
        guard backend.capabilities.contains(capability) else {
            throw JSONRPCError.backend(.unsupported(what, backend: backend.kind), doing: what)
        }
    }

    /// The session must be one this editor created or loaded here.
    func requireOpenSession(_ params: JSONObject, for method: String) throws -> String {
        guard let session = params["sessionId"]?.string else {
            throw JSONRPCError.invalidParams("\(method) needs \"sessionId\"")
        }
        guard openSessions.contains(session) else {
            throw JSONRPCError.invalidParams("session \(session) is not open on this connection; call session/new or session/load first")
        }
        return session
    }
}
