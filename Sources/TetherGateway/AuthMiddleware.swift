import Hummingbird
import Logging

/// Enforces the gateway's auth rules before any route runs: a bearer token, or a session cookie
/// (whose state-changing requests must be JSON, which a cross-site form cannot send). The health
/// check, `POST /v1/login` and the page's static files are open; with no tokens configured
/// everything is open.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let auth: GatewayAuth
    let logins: KeptLogins
    /// Without tokens: which browsers may call (`OpenGatewayGuard`).
    let openGuard: OpenGatewayGuard
    let failures: AuthFailureLimiter
    let logger: Logger

    static let openPaths: Set<String> = Set(["/v1/health", "/v1/login", "/v1/pair"]).union(PageAssets.files.keys)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if auth.isOpen {
            if let problem = openGuard.problem(host: request.head.authority, origin: request.headers[.origin],
                                                fetchSite: request.headers[HTTPFields.fetchSite]) {
                throw problem
            }
            return try await next(request, context)
        }
        if Self.openPaths.contains(request.uri.path) { return try await next(request, context) }
        // Another scheme (a proxy's basic auth in front of the page) is not ours: the cookie decides.
        if let authorization = request.headers[.authorization], let token = Self.bearer(authorization) {
            try Self.checkToken(token, from: context, auth: auth, failures: failures, logger: logger, refused: ProblemDetails(
                .unauthorized, "the bearer token was refused",
                detail: "send Authorization: Bearer TOKEN with one of the tokens in the [serve] table's tokens"))
            return try await next(request, context)
        }
        if let cookie = Self.cookie(GatewayAuth.cookieName, in: request.headers), await logins.accepts(cookie) {
            if Self.changesState(request.method), !Self.isJSON(request.headers[.contentType]) {
                throw ProblemDetails(.forbidden, "a cookie-authenticated request that changes state must be JSON",
                                     detail: "send Content-Type: application/json with the request (a cross-site form cannot)")
            }
            var context = context
            context.sessionCookie = cookie
            return try await next(request, context)
        }
        throw ProblemDetails(.unauthorized, "authentication required",
                             detail: "send Authorization: Bearer TOKEN, or log in with POST /v1/login {\"token\":…} for a session cookie")
    }

    /// Compares a presented token unless its client is locked out (429), and keeps the count of
    /// wrong ones (`AuthFailureLimiter`); a refusal is logged with the client's address, never the token.
    static func checkToken(_ token: String, from context: Context, auth: GatewayAuth, failures: AuthFailureLimiter,
                           logger: Logger, refused: ProblemDetails) throws {
        let client = context.channel.remoteAddress?.ipAddress ?? "unknown"
        if let wait = failures.retryAfter(client) {
            var problem = ProblemDetails(.tooManyRequests, "too many wrong tokens from \(client)",
                                         detail: "wait \(wait.wholeSeconds) s (Retry-After) and send one of the tokens in the [serve] table's tokens")
            problem.retryAfter = wait.wholeSeconds
            throw problem
        }
        guard auth.accepts(token: token) else {
            switch failures.recordFailure(client) {
            case .counted(let count):
                logger.warning("refused a wrong token", metadata: ["client": "\(client)", "failures": "\(count)"])
            case .lockedOut(let count, let lockout):
                logger.warning("refused a wrong token; the client waits before its next try",
                               metadata: ["client": "\(client)", "failures": "\(count)", "wait_s": "\(lockout.wholeSeconds)"])
            }
            throw refused
        }
        failures.recordSuccess(client)
    }

    static func bearer(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    static func cookie(_ name: String, in headers: HTTPFields) -> String? {
        for header in headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.trimmingCharacters(in: .whitespaces)
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                if trimmed[..<equals] == name { return String(trimmed[trimmed.index(after: equals)...]) }
            }
        }
        return nil
    }

    static func changesState(_ method: HTTPRequest.Method) -> Bool {
        ![.get, .head, .options].contains(method)
    }

    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let media = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return media == "application/json"
    }
}
