import Foundation
import Logging
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// The Codex Worker's REST surface: Bearer auth (not on `/health`), `{error:{code,message}}`
/// bodies turned into clear errors. The worker's messages are Chinese, so the switch is on
/// `code`, and the code is always shown.
struct CodexWorkerClient: Sendable {
    struct Configuration: Sendable {
        var baseURL: String
        var token: String?
        var profile: String
    }

    /// A worker error response.
    struct APIError: Error {
        let status: Int
        let code: String
        let message: String
    }

    let configuration: Configuration
    let http: HTTPClient

    var authorization: HTTPRequest.Authorization { configuration.token.map { .bearer($0) } ?? .none }

    func url(_ path: String) -> String {
        var base = configuration.baseURL
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    func get(_ path: String, authenticated: Bool = true) async throws -> JSONValue {
        try await call(.get, path, body: nil, authenticated: authenticated)
    }

    func post(_ path: String, body: JSONValue?) async throws -> JSONValue {
        try await call(.post, path, body: body)
    }

    /// Throws `APIError` for a worker error response (callers special-case codes), `TetherError` otherwise.
    func call(_ method: HTTPRequest.Method, _ path: String, body: JSONValue?, authenticated: Bool = true) async throws -> JSONValue {
        let request = HTTPRequest.json(method, url(path), body: body?.serialized ?? (method == .post ? "{}" : nil),
                                       authorization: authenticated ? authorization : .none)
        let response: HTTPResponse
        do {
            response = try await http.perform(request)
        } catch {
            throw error.tetherError(service: "the Codex Worker (profile \(configuration.profile))")
        }
        let value = response.body.isEmpty ? JSONValue.null : (try? JSONParser.parse(response.body))
        guard response.isSuccess else {
            let code = value?["error"]?["code"]?.string ?? "HTTP_\(response.status)"
            let message = value?["error"]?["message"]?.string ?? String(decoding: response.body.prefix(300), as: UTF8.self)
            throw APIError(status: response.status, code: code, message: message)
        }
        guard let value else {
            throw TetherError(.badData, "the Codex Worker sent a response that is not JSON for \(method.rawValue) \(path)")
        }
        return value
    }

    /// The generic translation of a worker error; callers handle the codes they give meaning to first.
    func tetherError(_ error: APIError, doing what: String) -> TetherError {
        let detail = "\(what) failed: the Codex Worker answered \(error.status) \(error.code) (\(error.message))"
        switch error.code {
        case "UNAUTHORIZED":
            return TetherError(.authentication, "the Codex Worker at \(configuration.baseURL) refused the token of profile \(configuration.profile) (401 UNAUTHORIZED)",
                               hint: configuration.token == nil ? "set profiles.\(configuration.profile).token (the worker's WORKER_TOKEN)"
                                   : "check profiles.\(configuration.profile).token: it must equal the worker's WORKER_TOKEN")
        case "JOB_NOT_FOUND":
            return TetherError(.notFound, detail, hint: "jobs live only in the worker's memory: a restarted worker has forgotten them")
        case "APPROVAL_NOT_FOUND":
            return TetherError(.notFound, detail, hint: "`tether approvals` lists what is pending")
        case "NOT_FOUND", "THREAD_NOT_FOUND", "PROJECT_NOT_FOUND":
            return TetherError(.notFound, detail)
        case "INVALID_DECISION_FOR_KIND":
            return TetherError(.unsupported, detail, hint: "accept_with_amendment applies to commands only")
        case "THREAD_ARCHIVED":
            return TetherError(.conflict, detail, hint: "unarchive the thread first")
        case "INTERNAL_ERROR" where error.message.contains("no rollout found for thread id"):
            // An unknown thread: codex cannot resume what it has no record of, and the worker
            // passes that on as a 500 (protocols/codex-worker.md), not as a 404.
            return TetherError(.notFound, detail, hint: "`tether sessions list` shows the threads")
        default:
            if error.status >= 500 { return TetherError(.unavailable, detail, retryable: true) }
            return TetherError(error.status == 409 ? .conflict : .failed, detail)
        }
    }
}
