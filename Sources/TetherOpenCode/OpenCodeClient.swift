import Foundation
import Logging
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// OpenCode's REST surface: URLs, Basic auth on every request, the `directory` scope, and error
/// bodies (`{name, data:{message}}` or `{_tag, message}`) turned into clear `TetherError`s.
struct OpenCodeClient: Sendable {
    struct Configuration: Sendable {
        var baseURL: String
        var username: String
        var password: String?
        var directory: String?
        var profile: String
    }

    let configuration: Configuration
    let http: HTTPClient

    var authorization: HTTPRequest.Authorization {
        configuration.password.map { .basic(username: configuration.username, password: $0) } ?? .none
    }

    /// `path` may carry a query already; `scoped` adds `directory=` for instance-scoped routes.
    func url(_ path: String, scoped: Bool = true) -> String {
        var base = configuration.baseURL
        while base.hasSuffix("/") { base.removeLast() }
        guard scoped, let directory = configuration.directory else { return base + path }
        let encoded = directory.addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed) ?? directory
        return base + path + (path.contains("?") ? "&" : "?") + "directory=" + encoded
    }

    func get(_ path: String, scoped: Bool = true) async throws -> JSONValue {
        try await call(.get, path, body: nil, scoped: scoped)
    }

    func post(_ path: String, body: JSONValue?, scoped: Bool = true) async throws -> JSONValue {
        try await call(.post, path, body: body, scoped: scoped)
    }

    func call(_ method: HTTPRequest.Method, _ path: String, body: JSONValue?, scoped: Bool = true) async throws -> JSONValue {
        let (url, response) = try await perform(method, path, body: body, scoped: scoped)
        guard response.isSuccess else { throw mapStatus(response, url: url) }
        if response.status == 204 || response.body.isEmpty { return .null }
        do {
            return try JSONParser.parse(response.body)
        } catch {
            throw TetherError(.badData, "OpenCode sent a response that is not JSON for \(method.rawValue) \(path): \(error.description)")
        }
    }

    /// A read of something only some server generations have (`GET /permission` and
    /// `GET /question` came after the legacy Hono server). nil means "this server has no such
    /// route": 404, 405 or 501, or a success that is not JSON (legacy servers proxied unknown
    /// paths to the web app's HTML). Other failures are errors as for `get`.
    func getIfServed(_ path: String, scoped: Bool = true) async throws -> JSONValue? {
        let (url, response) = try await perform(.get, path, body: nil, scoped: scoped)
        if Self.absentRouteStatuses.contains(response.status) { return nil }
        guard response.isSuccess else { throw mapStatus(response, url: url) }
        return try? JSONParser.parse(response.body)
    }

    /// Statuses that say a route does not exist on this server, not that a request failed.
    static let absentRouteStatuses: Set<Int> = [404, 405, 501]

    private func perform(_ method: HTTPRequest.Method, _ path: String, body: JSONValue?,
                         scoped: Bool) async throws -> (url: String, response: HTTPResponse) {
        let url = url(path, scoped: scoped)
        let request = HTTPRequest.json(method, url, body: body.map { $0.serialized } ?? (method == .get ? nil : "{}"),
                                       authorization: authorization)
        do {
            return (url, try await http.perform(request))
        } catch {
            throw mapTransport(error)
        }
    }

    func mapTransport(_ error: NetError) -> TetherError {
        if error.kind == .status(401) || error.kind == .status(403) { return authenticationError(status: error.status ?? 401) }
        return error.tetherError(service: "OpenCode (profile \(configuration.profile))")
    }

    func authenticationError(status: Int) -> TetherError {
        let name = configuration.profile
        if configuration.password == nil {
            return TetherError(.authentication, "OpenCode at \(configuration.baseURL) wants a password and profile \(name) has none (HTTP \(status))",
                               hint: "set profiles.\(name).password, e.g. { env = \"OPENCODE_SERVER_PASSWORD\" }")
        }
        return TetherError(.authentication, "OpenCode at \(configuration.baseURL) refused the credentials of profile \(name) (HTTP \(status))",
                           hint: "check profiles.\(name).password and username (default \"opencode\"): they must match the server's OPENCODE_SERVER_PASSWORD / OPENCODE_SERVER_USERNAME")
    }

    func mapStatus(_ response: HTTPResponse, url: String) -> TetherError {
        if response.status == 401 || response.status == 403 { return authenticationError(status: response.status) }
        let body = try? JSONParser.parse(response.body)
        let message = body?["data"]?["message"]?.string ?? body?["message"]?.string
            ?? String(decoding: response.body.prefix(300), as: UTF8.self)
        let name = body?["name"]?.string ?? body?["_tag"]?.string
        let detail = "OpenCode answered HTTP \(response.status)\(name.map { " \($0)" } ?? "")\(message.isEmpty ? "" : ": \(message)")"
        switch response.status {
        case 404: return TetherError(.notFound, detail, hint: "check the id (`tether sessions list`, `tether approvals`)")
        case 400, 422: return TetherError(.failed, detail)
        case 409: return TetherError(.conflict, detail, hint: "the session is busy: wait for the turn, or `tether abort SESSION`")
        case 421: return TetherError(.failed, detail, hint: "the server rejected the Host header; add it to server.allowedHosts or connect to 127.0.0.1")
        default: return TetherError(response.status >= 500 ? .unavailable : .failed, detail, retryable: response.status >= 500)
        }
    }
}

extension CharacterSet {
    static let urlQueryValueAllowed: CharacterSet = {
        var set = CharacterSet.urlQueryAllowed
        set.remove(charactersIn: "&=+?#")
        return set
    }()
}
