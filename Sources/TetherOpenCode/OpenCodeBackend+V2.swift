import Foundation
import Synchronization
import TetherCore
import TetherNet
import TetherStreaming

/// Which generation a backend's server speaks, found once (`GET /api/info`) and kept.
final class OpenCodeServerGeneration: Sendable {
    let isV2 = Mutex<Bool?>(nil)
}

/// The `opencode` backend against an OpenCode 2.x server (protocols/opencode-v2.md; adapters.md,
/// "OpenCode 2"): the same capabilities as 1.x, over `/api/*`. Each public operation of
/// `OpenCodeBackend` asks `isGeneration2()` first and comes here when it is.
extension OpenCodeBackend {
    /// `GET /api/info` once per backend: a 2.x version there means 2.x (`OpenCode2Facts`); a
    /// 404, or an answer that is not JSON (1.x, or the legacy server's web app), means 1.x,
    /// whose own detection then goes on as before. A 401 is the credentials' error, said so.
    func isGeneration2() async throws -> Bool {
        if let known = generation.isV2.withLock({ $0 }) { return known }
        let info = try await client.getIfServed("/api/info", scoped: false)
        let isV2 = OpenCode2Facts.isGeneration2(info: info)
        generation.isV2.withLock { $0 = isV2 }
        return isV2
    }

    func check2() async throws -> CheckReport {
        let info = try await client2.get("/info")
        _ = try await client2.list("/session?limit=1", what: "the session list")
        logger.info("OpenCode API generation", metadata: ["api": "v2"])
        var details: JSONObject = ["api": "v2"]
        if let directory = configuration.directory { details["directory"] = .string(directory) }
        return CheckReport(endpoint: configuration.baseURL, reachable: true, authenticated: configuration.password != nil,
                           version: info["version"]?.string, details: details)
    }

    // MARK: Sessions

    /// Sessions `sessions list`, and messages `history`, reads at most (pages of 200).
    static let listLimit = 10_000

    func listSessions2(_ request: SessionListRequest) async throws -> [Session] {
        var query = "limit=200"
        if let directory = configuration.directory { query += "&directory=" + Self.queryValue(directory) }
        let active = (try? await client2.get("/session/active"))?.object ?? [:]
        return try await client2.listAll("/session", query: query, what: "the session list", limit: Self.listLimit).compactMap { info -> Session? in
            guard var session = OpenCode2Mapper.session(from: info) else { return nil }
            session.status = active[session.id] == nil ? .idle : .busy
            return session
        }.sorted { ($0.updatedAt ?? 0) > ($1.updatedAt ?? 0) }
    }

    func createSession2(_ request: SessionCreateRequest) async throws -> Session {
        var body: JSONObject = [:]
        if let title = request.title { body["title"] = .string(title) }
        if let directory = request.directory ?? configuration.directory { body["location"] = ["directory": .string(directory)] }
        let created = try await client2.post("/session", body: .object(body))
        guard let session = OpenCode2Mapper.session(from: created) else {
            throw TetherError(.badData, "OpenCode created a session but its answer has no id: \(created.serialized.prefix(200))")
        }
        return session
    }

    func session2(id: String) async throws -> Session {
        let info = try await client2.get("/session/\(Self.escape(id))")
        guard var session = OpenCode2Mapper.session(from: info) else {
            throw TetherError(.badData, "OpenCode's session \(id) has no id field")
        }
        let active = (try? await client2.get("/session/active"))?.object ?? [:]
        session.status = active[id] == nil ? .idle : .busy
        return session
    }

    // MARK: History

    /// The message union, read newest first in pages of 200 (the server's most) and replayed
    /// oldest first.
    func history2(session: String, limit: Int?) async throws -> [Event] {
        let newestFirst = try await client2.listAll("/session/\(Self.escape(session))/message", query: "limit=200", firstQuery: "order=desc",
                                                   what: "the message list", limit: Self.listLimit)
        let active = (try? await client2.get("/session/active"))?.object ?? [:]
        var mapper = OpenCode2Mapper()
        var events = mapper.replay(session: session, messages: newestFirst.reversed(), busy: active[session] != nil)
        if let limit {
            let keep = Set(events.filter { $0.type == .turnStarted }.compactMap(\.turn).suffix(limit))
            events.removeAll { $0.turn.map { !keep.contains($0) } ?? true }
        }
        return events
    }

    // MARK: Turns

    /// `POST …/prompt {text}`. Its answer is the admitted input (`Session.Inbox.User`), not the
    /// turn; its `id` is the turn's id (the user message's, which `session.input.promoted` names
    /// when its execution starts), so the receipt names the turn. `--model` is set on the session
    /// first (`POST …/model`): a 2.x prompt carries no model.
    func send2(_ request: SendRequest) async throws -> SendReceipt {
        let session = try Self.escape(request.session)
        if let model = request.model {
            let split = model.split(separator: "/", maxSplits: 1)
            guard split.count == 2 else {
                throw TetherError(.usage, "OpenCode models are named provider/model, got \"\(model)\"",
                                  hint: "e.g. --model anthropic/claude-sonnet-4")
            }
            _ = try await client2.post("/session/\(session)/model",
                                       body: OpenCode2Facts.modelBody(provider: String(split[0]), model: String(split[1])))
        }
        let item = try await client2.post("/session/\(session)/prompt", body: ["text": .string(request.text)])
        let input = item["id"]?.string
        return SendReceipt(session: request.session, turn: input,
                           data: .compact(["input": JSONValue(input), "delivery": JSONValue(item["delivery"]?.string)]))
    }

    func abort2(session: String) async throws {
        _ = try await client2.post("/session/\(Self.escape(session))/interrupt", body: nil)
    }

    // MARK: Approvals

    /// A session's pending permissions and forms, as the server lists them.
    func pending2(session: String) async throws -> [JSONValue] {
        let escaped = try Self.escape(session)
        let permissions = try await client2.list("/session/\(escaped)/permission", what: "the permission list")
        let forms = (try? await client2.list("/session/\(escaped)/form", what: "the form list")) ?? []
        return permissions + forms
    }

    func pendingApprovals2(session: String?) async throws -> [Approval] {
        let sessions: [String]
        if let session {
            sessions = [session]
        } else {
            sessions = (try await client2.get("/session/active")).object?.keys.sorted() ?? []
        }
        var approvals: [Approval] = []
        for session in sessions {
            for item in try await pending2(session: session) {
                let approval = item["fields"] != nil || item["mode"] != nil
                    ? OpenCode2Mapper.approval(fromForm: item, turn: nil)
                    : OpenCode2Mapper.approval(fromPermission: item, turn: nil)
                if let approval { approvals.append(approval) }
            }
        }
        return approvals
    }

    /// Permissions: `POST /api/session/:sid/permission/:rid/reply {decision}` (204). Forms:
    /// `POST …/form/:id/reply {answer}` or, declined, `DELETE …/form/:id`.
    func approve2(id: String, answer: ApprovalAnswer) async throws -> Event {
        guard let parts = CompositeID.split(id, count: 2) else {
            throw TetherError(.usage, "an OpenCode 2 approval id is SESSION/REQUEST, got \(id)", hint: "`tether approvals` lists them")
        }
        let session = try Self.escape(parts[0])
        let request = try Self.escape(parts[1])
        if parts[1].hasPrefix("frm_") {
            return try await answerForm2(id: id, session: parts[0], form: parts[1], answer: answer)
        }
        let decision = try OpenCodeDecision.reply(for: answer.decision)
        do {
            _ = try await client2.post("/session/\(session)/permission/\(request)/reply", body: ["decision": .string(decision)])
        } catch let error as TetherError where error.code == .notFound {
            throw TetherError(.notFound, "approval \(id) is not pending on OpenCode (answered already, or its turn ended)",
                              hint: "`tether approvals` lists what is pending")
        }
        if answer.decision == .cancel { try await abort2(session: parts[0]) }
        return .approvalResolved(id: id, session: parts[0], turn: nil, decision: answer.decision.rawValue)
    }

    private func answerForm2(id: String, session: String, form: String, answer: ApprovalAnswer) async throws -> Event {
        let base = "/session/\(try Self.escape(session))/form/\(try Self.escape(form))"
        let resolution: String
        do {
            switch answer.decision {
            case .decline, .cancel:
                guard answer.answers.isEmpty else {
                    throw TetherError(.usage, "--answer goes with accepting a question, not with --decision \(answer.decision.rawValue)")
                }
                try await client2.delete(base)
                resolution = "rejected"
            case .accept where !answer.answers.isEmpty:
                let forms = try await client2.list("/session/\(try Self.escape(session))/form", what: "the form list")
                guard let info = forms.first(where: { $0["id"]?.string == form }) else {
                    throw TetherError(.notFound, "question \(id) is not pending on OpenCode (answered already, or its turn ended)",
                                      hint: "`tether approvals` lists what is pending")
                }
                let reply = OpenCode2Mapper.formAnswer(fields: info["fields"]?.array ?? [], answers: answer.answers)
                _ = try await client2.post(base + "/reply", body: ["answer": .object(reply)])
                resolution = "answered"
            default:
                throw TetherError(.usage, "approval \(id) is a question: it is answered with its choices, not a decision",
                                  hint: "tether approve \(id) --answer KEY=VALUE (`tether approvals` shows the fields), or --decision decline to dismiss it")
            }
        } catch let error as TetherError where error.code == .notFound {
            throw TetherError(.notFound, "question \(id) is not pending on OpenCode (answered already, or its turn ended)",
                              hint: "`tether approvals` lists what is pending")
        }
        if answer.decision == .cancel { try await abort2(session: session) }
        return .approvalResolved(id: id, session: session, turn: nil, decision: resolution)
    }

    static func queryValue(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed) ?? value
    }
}
