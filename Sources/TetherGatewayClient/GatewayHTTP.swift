import Foundation
import TetherAdapterSupport
import TetherCore
import TetherNet
import TetherStreaming

/// A gateway's REST surface as a client sees it: URLs under the gateway's base, the Bearer token
/// on every request, and its RFC 7807 problems turned back into the `TetherError` they were made
/// from (their `code` is the design's error code).
struct GatewayHTTP: Sendable {
    let baseURL: String
    let token: String?
    /// The local profile's name, for messages.
    let profile: String
    let http: HTTPClient

    var authorization: HTTPRequest.Authorization { token.map { .bearer($0) } ?? .none }
    var service: String { "the gateway (profile \(profile))" }

    func url(_ path: String) -> String {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    func get(_ path: String, doing what: String) async throws -> JSONValue {
        try await call(.get, path, body: nil, doing: what)
    }

    func post(_ path: String, body: JSONValue, doing what: String) async throws -> JSONValue {
        try await call(.post, path, body: body, doing: what)
    }

    /// Event lines as the gateway writes them (history, approvals): each a schema-v1 event.
    func events(_ path: String, doing what: String) async throws -> [Event] {
        let value = try await get(path, doing: what)
        guard let lines = value.array else {
            throw TetherError(.badData, "\(service) answered \(what) with something that is not a list of events")
        }
        return try lines.map { try Self.event($0, doing: what) }
    }

    static func event(_ value: JSONValue, doing what: String) throws -> Event {
        try event(line: value.serialized, doing: what)
    }

    static func event(line: String, doing what: String) throws -> Event {
        do {
            return try EventCodec.decode(line)
        } catch {
            throw TetherError(.badData, "the gateway sent an event this tether cannot read while \(what): \(error)",
                              hint: "a gateway newer than this tether? compare `tether --version` on both machines")
        }
    }

    func call(_ method: HTTPRequest.Method, _ path: String, body: JSONValue?, doing what: String) async throws -> JSONValue {
        let request = HTTPRequest.json(method, url(path), body: body?.serialized ?? (method == .get ? nil : "{}"),
                                       authorization: authorization)
        let response: HTTPResponse
        do {
            response = try await http.perform(request)
        } catch {
            throw error.kind == .status(401) || error.kind == .status(403)
                ? authenticationError(status: error.status ?? 401) : error.tetherError(service: service)
        }
        guard response.isSuccess else { throw problem(response, doing: what) }
        if response.body.isEmpty { return .null }
        do {
            return try JSONParser.parse(response.body)
        } catch {
            throw TetherError(.badData, "\(service) answered \(what) with something that is not JSON: \(error.description)",
                              hint: "is \(baseURL) a `tether serve`? `tether check` tells")
        }
    }

    func authenticationError(status: Int) -> TetherError {
        token == nil
            ? TetherError(.authentication, "the gateway at \(baseURL) wants a token and profile \(profile) has none (HTTP \(status))",
                          hint: "set profiles.\(profile).token, e.g. { env = \"TETHER_GATEWAY_TOKEN\" }, to one of the gateway's [serve] tokens")
            : TetherError(.authentication, "the gateway at \(baseURL) refused the token of profile \(profile) (HTTP \(status))",
                          hint: "profiles.\(profile).token must be one of the gateway's [serve] tokens")
    }

    /// A problem document back into the error it reports. Its `detail` already carries the
    /// remote side's hint; `title` says what failed.
    func problem(_ response: HTTPResponse, doing what: String) -> TetherError {
        if response.status == 401 || response.status == 403 { return authenticationError(status: response.status) }
        let body = try? JSONParser.parse(response.body)
        let title = body?["title"]?.string ?? "\(what) failed"
        let detail = body?["detail"]?.string ?? String(decoding: response.body.prefix(300), as: UTF8.self)
        let message = "\(service): \(title) (HTTP \(response.status))" + (detail.isEmpty ? "" : ": \(detail)")
        switch body?["code"]?.string {
        case "not_found" where title.hasPrefix("no served profile"):
            return TetherError(.configuration, message,
                               hint: "profiles.\(profile).remote_profile must name one of the gateway's profiles (`tether check` lists them)")
        case "not_found": return TetherError(.notFound, message, hint: "check the id (`tether sessions list`, `tether approvals`)")
        case "conflict": return TetherError(.conflict, message)
        case "bad_request": return TetherError(.usage, message)
        case "unsupported": return TetherError(.unsupported, message, hint: "`tether check` lists what the remote profile can do")
        case "timeout": return TetherError(.timeout, message, retryable: true)
        case "unavailable": return TetherError(.unavailable, message, retryable: true)
        case "too_many_requests": return TetherError(.unavailable, message, hint: "wait a minute and try again", retryable: true)
        default: return TetherError(response.status >= 500 ? .unavailable : .failed, message, retryable: response.status >= 500)
        }
    }
}
