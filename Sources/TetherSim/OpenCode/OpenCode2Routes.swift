import FlyingFox
import Foundation

/// Request handling of the simulated OpenCode 2.x server (protocols/opencode-v2.md §2–§4): only
/// `/api/*` routes; Basic auth (user `opencode`) on every one, always; single objects as
/// `{data}`, lists as `{data, cursor}`; errors as Effect tagged errors `{_tag, message, …}`.
struct OpenCode2Routes: Sendable {
    /// What `GET /api/info` reports when the options keep 1.x's default version.
    static let defaultVersion = "2.0.17-fake"

    let options: OpenCodeSimulator.Options
    let state: OpenCode2State
    let streams: StreamRegistry
    let log: RequestLog
    let baseURL: String

    var version: String { options.version.hasPrefix("1.") ? Self.defaultVersion : options.version }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let body = (try? await request.bodyData) ?? Data()
        let recorded = RecordedRequest(request, body: body)
        log.append(recorded)
        guard OpenCodeAuth(username: "opencode", password: options.password ?? "").permits(recorded) else {
            return SSEResponse.json(["_tag": "UnauthorizedError", "message": "Authentication required"],
                                    status: .unauthorized, headers: [("www-authenticate", "Basic realm=\"Secure Area\"")])
        }
        let path = request.path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        guard path.first == "api" else { return Self.error(404, "NotFoundError", "Not found: \(request.path)") }
        return await route(recorded.method, Array(path.dropFirst()), recorded)
    }

    // MARK: Envelopes and errors

    static func data(_ value: OrderedJSON) -> HTTPResponse { SSEResponse.json(["data": value]) }

    static func list(_ values: [OrderedJSON]) -> HTTPResponse { SSEResponse.json(["data": .array(values), "cursor": [:]]) }

    static func error(_ status: Int, _ tag: String, _ message: String, _ extra: OrderedJSON = [:]) -> HTTPResponse {
        var body: OrderedJSON = ["_tag": .string(tag), "message": .string(message)]
        if case .object(let members) = extra { for member in members { body[member.key] = member.value } }
        return SSEResponse.json(body, status: SSEResponse.status(status))
    }

    /// A list's cursor: opaque to the client (base64url JSON), here where the next page starts
    /// and in which order.
    static func cursor(offset: Int, ascending: Bool = false) -> String {
        Data("{\"offset\":\(offset),\"asc\":\(ascending)}".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func position(ofCursor cursor: String) -> (offset: Int, ascending: Bool)? {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let offset = object["offset"] as? Int, offset >= 0 else { return nil }
        return (offset, object["asc"] as? Bool ?? false)
    }

    static func sessionNotFound(_ id: String) -> HTTPResponse {
        error(404, "SessionNotFoundError", "Session not found: \(id)", ["sessionID": .string(id)])
    }

    static func invalid(_ message: String) -> HTTPResponse { error(400, "InvalidRequestError", message) }

    // MARK: Routing

    private func route(_ method: String, _ path: [String], _ request: RecordedRequest) async -> HTTPResponse {
        func on(_ expected: String, _ pattern: String...) -> [String]? {
            guard method == expected, path.count == pattern.count else { return nil }
            var captures: [String] = []
            for (component, part) in zip(path, pattern) {
                if part == "*" { captures.append(component) } else if component != part { return nil }
            }
            return captures
        }
        let json = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]

        if on("GET", "info") != nil {
            return Self.data(["version": .string(version), "pid": .int(Int(ProcessInfo.processInfo.processIdentifier)),
                              "urls": [.string(baseURL)], "paths": ["tmp": "/tmp"]])
        }
        if on("GET", "event") != nil {
            let body = options.faults.dripBytes ? streams.makeBody(maxChunk: 1, chunkDelay: options.faults.dripDelay) : streams.makeBody()
            await state.subscribeGlobal(body)
            return Self.eventStream(body)
        }
        if let id = on("GET", "experimental", "session", "*", "log")?.first {
            guard await state.sessions[id] != nil else { return Self.sessionNotFound(id) }
            let afterText = request.queryValue("after")
            guard let after = afterText.map({ Int($0) }) ?? 0, after >= 0 else {
                return Self.invalid("after must be a non-negative integer, got \(afterText ?? "")")
            }
            let body = options.faults.dripBytes ? streams.makeBody(maxChunk: 1, chunkDelay: options.faults.dripDelay) : streams.makeBody()
            await state.subscribeLog(body, session: id, after: after, follow: request.queryValue("follow") == "true")
            return Self.eventStream(body)
        }
        if on("GET", "session") != nil {
            let limit = request.queryValue("limit").flatMap { Int($0) } ?? 50
            guard (1...200).contains(limit) else { return Self.invalid("limit must be between 1 and 200, got \(limit)") }
            var offset = 0
            if let cursor = request.queryValue("cursor") {
                guard let position = Self.position(ofCursor: cursor) else {
                    return Self.error(400, "InvalidCursorError", "Invalid cursor: \(cursor)")
                }
                offset = position.offset
            }
            let (page, more) = await state.sessionList(directory: request.queryValue("directory"), limit: limit, offset: offset)
            return SSEResponse.json(["data": .array(page), "cursor": more ? ["next": .string(Self.cursor(offset: offset + page.count))] : [:]])
        }
        if on("POST", "session") != nil {
            guard request.body.isEmpty || json != nil else { return Self.invalid("Expected an object") }
            let directory = (json?["location"] as? [String: Any])?["directory"] as? String
            let model = (json?["model"] as? [String: Any]).flatMap(Self.model)
            return Self.data(await state.createSession(title: json?["title"] as? String, directory: directory, model: model))
        }
        if on("GET", "session", "active") != nil {
            return Self.data(await state.active)
        }
        if let id = on("GET", "session", "*")?.first {
            guard let info = await state.sessions[id] else { return Self.sessionNotFound(id) }
            return Self.data(info)
        }
        if let id = on("DELETE", "session", "*")?.first {
            guard await state.deleteSession(id) else { return Self.sessionNotFound(id) }
            return SSEResponse.empty(.noContent)
        }
        if let id = on("GET", "session", "*", "message")?.first {
            guard let all = await state.messages[id] else { return Self.sessionNotFound(id) }
            let limit = request.queryValue("limit").flatMap { Int($0) } ?? 50
            guard (1...200).contains(limit) else { return Self.invalid("limit must be between 1 and 200") }
            // A cursor carries its page's order; `order` beside it is refused (§2).
            var position = (offset: 0, ascending: request.queryValue("order") == "asc")
            if let cursor = request.queryValue("cursor") {
                guard request.queryValue("order") == nil else { return Self.invalid("order cannot be combined with cursor") }
                guard let decoded = Self.position(ofCursor: cursor) else {
                    return Self.error(400, "InvalidCursorError", "Invalid cursor: \(cursor)")
                }
                position = decoded
            }
            let ordered = position.ascending ? all : all.reversed()
            let page = Array(ordered.dropFirst(position.offset).prefix(limit))
            let end = position.offset + page.count
            return SSEResponse.json(["data": .array(page),
                                     "cursor": end < ordered.count ? ["next": .string(Self.cursor(offset: end, ascending: position.ascending))] : [:]])
        }
        if let ids = on("GET", "session", "*", "message", "*") {
            guard await state.sessions[ids[0]] != nil else { return Self.sessionNotFound(ids[0]) }
            guard let message = await state.message(ids[1], session: ids[0]) else {
                return Self.error(404, "MessageNotFoundError", "Message not found: \(ids[1])",
                                  ["sessionID": .string(ids[0]), "messageID": .string(ids[1])])
            }
            return Self.data(message)
        }
        if let id = on("POST", "session", "*", "prompt")?.first {
            guard let text = json?["text"] as? String else { return Self.invalid("Missing key at [\"text\"]") }
            let failure = options.faults.failFirstPrompt.flatMap { failure in
                log.all.count(where: { $0.method == "POST" && $0.path.hasSuffix("/prompt") }) == 1 ? failure : nil
            }
            let down = Self.error(503, "ServiceUnavailableError", "fault: server going down")
            if failure == .beforeStoring { return down }
            guard let item = await state.prompt(id, text: text, delivery: json?["delivery"] as? String ?? "queue") else {
                return Self.sessionNotFound(id)
            }
            if failure == .afterStoring { return down }
            return Self.data(item)
        }
        if let id = on("POST", "session", "*", "interrupt")?.first {
            guard let interrupted = await state.interrupt(id) else { return Self.sessionNotFound(id) }
            return SSEResponse.json(["interrupted": .bool(interrupted)])
        }
        if let id = on("POST", "session", "*", "model")?.first {
            guard let model = (json?["model"] as? [String: Any]).flatMap(Self.model) else {
                return Self.invalid("Missing key at [\"model\"]: expected {model: {providerID, id}}")
            }
            guard let info = await state.selectModel(id, model: model) else { return Self.sessionNotFound(id) }
            return Self.data(info)
        }
        if let id = on("GET", "session", "*", "permission")?.first {
            guard await state.sessions[id] != nil else { return Self.sessionNotFound(id) }
            return SSEResponse.json(["data": .array(await state.permissions.filter { $0["sessionID"]?.stringValue == id })])
        }
        if let ids = on("POST", "session", "*", "permission", "*", "reply") {
            guard let decision = json?["decision"] as? String else { return Self.invalid("Missing key at [\"decision\"]") }
            guard ["once", "always", "reject"].contains(decision) else {
                return Self.invalid("decision must be once, always or reject, got \(decision)")
            }
            switch await state.replyPermission(session: ids[0], request: ids[1], decision: decision) {
            case .done, .settled: return SSEResponse.empty(.noContent)
            case .notFound:
                return Self.error(404, "PermissionNotFoundError", "Permission request not found: \(ids[1])", ["requestID": .string(ids[1])])
            }
        }
        if let id = on("GET", "session", "*", "form")?.first {
            guard await state.sessions[id] != nil else { return Self.sessionNotFound(id) }
            return SSEResponse.json(["data": .array(await state.forms.filter { $0["sessionID"]?.stringValue == id })])
        }
        if let ids = on("POST", "session", "*", "form", "*", "reply") {
            guard let answer = json?["answer"] as? [String: Any],
                  let converted = Self.answer(answer) else {
                return Self.error(400, "FormInvalidAnswerError", "answer must map field keys to string, number, boolean or string[]")
            }
            return formResult(await state.replyForm(session: ids[0], form: ids[1], answer: converted), ids[1])
        }
        if let ids = on("DELETE", "session", "*", "form", "*") {
            return formResult(await state.replyForm(session: ids[0], form: ids[1], answer: nil), ids[1])
        }
        if on("GET", "model") != nil {
            return Self.list([
                ["providerID": "anthropic", "id": "claude-sonnet-4", "name": "Claude Sonnet 4"],
                ["providerID": "openai", "id": "gpt-5", "name": "GPT-5"],
            ])
        }
        return Self.error(404, "NotFoundError", "Not found: /api/\(path.joined(separator: "/"))")
    }

    private func formResult(_ outcome: OpenCode2State.ReplyOutcome, _ id: String) -> HTTPResponse {
        switch outcome {
        case .done: return SSEResponse.empty(.noContent)
        case .settled: return Self.error(409, "FormAlreadySettledError", "Form already settled: \(id)")
        case .notFound: return Self.error(404, "FormNotFoundError", "Form not found: \(id)", ["id": .string(id)])
        }
    }

    private static func eventStream(_ body: StreamingBody) -> HTTPResponse {
        SSEResponse.stream(body, headers: [("Cache-Control", "no-cache, no-transform"), ("X-Accel-Buffering", "no")])
    }

    /// `{providerID, id, variant?}`.
    static func model(_ object: [String: Any]) -> OrderedJSON? {
        guard let provider = object["providerID"] as? String, let id = object["id"] as? String else { return nil }
        var model: OrderedJSON = ["providerID": .string(provider), "id": .string(id)]
        if let variant = object["variant"] as? String { model["variant"] = .string(variant) }
        return model
    }

    /// A form answer: each field's value a string, number, boolean or string[]; nil otherwise.
    static func answer(_ object: [String: Any]) -> OrderedJSON? {
        var answer: OrderedJSON = [:]
        for key in object.keys.sorted() {
            switch object[key] {
            case let value as String: answer[key] = .string(value)
            case let value as NSNumber:
                answer[key] = String(cString: value.objCType) == "c" ? .bool(value.boolValue) : .double(value.doubleValue)
            case let value as [Any]:
                let strings = value.compactMap { $0 as? String }
                guard strings.count == value.count else { return nil }
                answer[key] = .array(strings.map { .string($0) })
            default:
                return nil
            }
        }
        return answer
    }
}
