import Hummingbird
import TetherCore
import TetherStreaming

/// Sessions, history, turns and abort of one profile.
extension GatewayAPI {
    func session(_ context: GatewayRequestContext) throws -> String {
        try pathID("session", context)
    }

    func listSessions(_ context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        try require(.sessions, "listing sessions", of: profile)
        let sessions = try await calling("listing the sessions of \(profile.name)") {
            try await profile.backend.listSessions(SessionListRequest())
        }
        return JSONResponse.ok(.array(sessions.map(\.json)))
    }

    func createSession(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        try require(.createSession, "creating sessions", of: profile)
        let body = try await JSONRequest.object(request)
        let model = try Self.model(body)
        let created = try await calling("creating a session in \(profile.name)") {
            try await profile.backend.createSession(SessionCreateRequest(title: body["title"]?.string, directory: body["directory"]?.string))
        }
        if let model {
            do {
                try await journal.log.setModel(model, profile: profile.name, session: created.id)
            } catch {
                throw ProblemDetails(.unavailable, "session \(created.id) was created, but its model could not be kept",
                                     detail: "the gateway's database failed (\(error)); name the model in each turn instead")
            }
        }
        sessionFollows[profile.name]?.request(created.id)
        return JSONResponse.ok(created.json, status: .created)
    }

    func showSession(_ context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        try require(.sessions, "reading sessions", of: profile)
        let id = try session(context)
        let found = try await calling("reading session \(id) of \(profile.name)") { try await profile.backend.session(id: id) }
        return JSONResponse.ok(found.json)
    }

    func history(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        try require(.history, "history", of: profile)
        let id = try session(context)
        let limit = try request.uri.queryParameters.get("limit").map {
            try Self.integer($0, name: "limit", default: 0, range: 1...100_000)
        }
        let events = try await calling("reading the history of session \(id)") {
            try await profile.backend.history(session: id, limit: limit)
        }
        return JSONResponse.array(events.map { Self.line(profile.stamp($0)) })
    }

    func startTurn(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        try require(.send, "starting turns", of: profile)
        let id = try session(context)
        let body = try await JSONRequest.object(request)
        guard let text = body["text"]?.string, !text.isEmpty else {
            throw ProblemDetails(.badRequest, "no prompt text", detail: "send {\"text\":\"…\"} (and optionally \"model\")")
        }
        // The turn's own model, else the one its session was created with, else the backend's default.
        var model = try Self.model(body)
        if model == nil { model = (try? await journal.log.model(profile: profile.name, session: id)) ?? nil }
        let receipt = try await calling("starting a turn in session \(id)") {
            try await profile.backend.send(SendRequest(session: id, text: text, model: model))
        }
        // A per-session backend: this turn gets a follower of its own, from its first event; the
        // session is followed for turns started elsewhere — once the backend took the turn, so
        // an id it does not have is never followed.
        if let job = receipt.turn { sessionFollows[profile.name]?.follow(job: job, session: receipt.session) }
        sessionFollows[profile.name]?.request(receipt.session)
        return JSONResponse.ok(["session": .string(receipt.session), "turn": JSONValue(receipt.turn)], status: .accepted)
    }

    func abort(_ context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        try require(.abort, "aborting turns", of: profile)
        let id = try session(context)
        try await calling("aborting the turn in session \(id)") { try await profile.backend.abort(session: id, turn: nil) }
        return JSONResponse.ok(["session": .string(id)], status: .accepted)
    }

    /// A body's `model`: absent, or a non-empty string.
    static func model(_ body: JSONObject) throws -> String? {
        guard let value = body["model"], !value.isNull else { return nil }
        guard let model = value.string, !model.allSatisfy(\.isWhitespace) else {
            throw ProblemDetails(.badRequest, "model must be a non-empty string",
                                 detail: "name a model as GET /v1/profiles/{profile}/models lists it, e.g. \"anthropic/claude-sonnet-4\"")
        }
        return model
    }
}
