import Foundation
import HTTPTypes
import Hummingbird
import TetherCore
import TetherStreaming

/// Health, login and logout, and the profile list.
extension GatewayAPI {
    func health() -> Response {
        // Whether the page should offer "Log out": without tokens there is nothing to log out of.
        // `gateway` and `upstream`: what a gateway fanning this one in checks for loops.
        JSONResponse.ok(["status": "ok", "version": .string(version), "auth": auth.isOpen ? "none" : "token",
                         "gateway": .string(identity.id), "upstream": JSONValue(identity.upstream)])
    }

    func login(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard AuthMiddleware.isJSON(request.headers[.contentType]) else {
            throw ProblemDetails(.unsupportedMediaType, "a login must be JSON",
                                 detail: "send Content-Type: application/json with {\"token\":\"…\"}")
        }
        let body = try await JSONRequest.object(request)
        guard let token = body["token"]?.string, !token.isEmpty else {
            throw ProblemDetails(.badRequest, "no token in the login request", detail: "send {\"token\":\"…\"} as JSON")
        }
        guard !auth.isOpen else {
            return JSONResponse.ok(["authenticated": true])
        }
        try AuthMiddleware.checkToken(token, from: context, auth: auth, failures: authFailures, logger: logger, refused: ProblemDetails(
            .unauthorized, "the token was refused", detail: "use one of the tokens in the gateway's [serve] table"))
        var response = JSONResponse.ok(["authenticated": true])
        response.headers[.setCookie] = Self.cookie(await logins.open(), secure: Self.cameOverHTTPS(request), maxAge: nil)
        return response
    }

    func logout(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        if let cookie = context.sessionCookie ?? AuthMiddleware.cookie(GatewayAuth.cookieName, in: request.headers) {
            await logins.revoke(cookie)
        }
        var response = JSONResponse.ok(["authenticated": false])
        response.headers[.setCookie] = Self.cookie("", secure: Self.cameOverHTTPS(request), maxAge: 0)
        return response
    }

    static func cookie(_ value: String, secure: Bool, maxAge: Int?) -> String {
        var cookie = "\(GatewayAuth.cookieName)=\(value); Path=/; HttpOnly; SameSite=Strict"
        if secure { cookie += "; Secure" }
        if let maxAge { cookie += "; Max-Age=\(maxAge)" }
        return cookie
    }

    /// The gateway itself speaks plain HTTP; https is a proxy or tunnel in front that says so.
    static func cameOverHTTPS(_ request: Request) -> Bool {
        if request.uri.scheme == .https { return true }
        let forwarded = request.headers[HTTPFields.forwardedProto]
        return forwarded?.split(separator: ",").first?.trimmingCharacters(in: .whitespaces).lowercased() == "https"
    }

    func listProfiles() -> Response {
        JSONResponse.ok(.array(profiles.map(\.json)))
    }
}
