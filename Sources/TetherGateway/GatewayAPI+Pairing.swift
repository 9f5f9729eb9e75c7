import Foundation
import Hummingbird
import TetherCore

/// `POST /v1/pair {code}`: a one-time pairing code (`tether pair`) traded for the normal login
/// cookie. The code works once and for 5 minutes; wrong codes count as wrong tokens for the
/// client's back-off, like a wrong login.
extension GatewayAPI {
    func pair(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard AuthMiddleware.isJSON(request.headers[.contentType]) else {
            throw ProblemDetails(.unsupportedMediaType, "a pairing request must be JSON",
                                 detail: "send Content-Type: application/json with {\"code\":\"…\"} (the code in the pairing link)")
        }
        let body = try await JSONRequest.object(request)
        guard let code = body["code"]?.string, !code.isEmpty else {
            throw ProblemDetails(.badRequest, "no code in the pairing request", detail: "send {\"code\":\"…\"}: the part of the link after #pair=")
        }
        let client = context.channel.remoteAddress?.ipAddress ?? "unknown"
        if let wait = authFailures.retryAfter(client) {
            var problem = ProblemDetails(.tooManyRequests, "too many wrong codes or tokens from \(client)",
                                         detail: "wait \(wait.wholeSeconds) s (Retry-After), then use a new link from tether pair")
            problem.retryAfter = wait.wholeSeconds
            throw problem
        }
        let redeemed: Bool
        do {
            redeemed = try await journal.log.redeemPairingCode(code)
        } catch {
            throw ProblemDetails(.unavailable, "the pairing code could not be checked", detail: "the gateway's database failed: \(error)")
        }
        guard redeemed else {
            _ = authFailures.recordFailure(client)
            logger.warning("refused a pairing code that was used, expired or never minted", metadata: ["client": "\(client)"])
            throw ProblemDetails(.unauthorized, "the pairing link was already used or has expired",
                                 detail: "a link works once, for 5 minutes: run tether pair for a new one")
        }
        authFailures.recordSuccess(client)
        logger.info("a browser paired with a one-time code", metadata: ["client": "\(client)"])
        var response = JSONResponse.ok(["authenticated": true])
        if !auth.isOpen {
            response.headers[.setCookie] = Self.cookie(await logins.open(), secure: Self.cameOverHTTPS(request), maxAge: nil)
        }
        return response
    }
}
