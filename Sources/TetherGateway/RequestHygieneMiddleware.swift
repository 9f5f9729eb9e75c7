import HTTPTypes
import Hummingbird

/// The outermost rules, before auth and routing: an HTTP/1.1 request names exactly one `Host`
/// (RFC 9112 §3.2: a server answers 400 otherwise, and the no-token guard judges that one
/// name), and no response of the gateway may be sniffed into another type by a browser.
struct RequestHygieneMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        if let problem = Self.hostProblem(request) {
            response = problem.response()
        } else {
            response = try await next(request, context)
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        return response
    }

    /// HTTPTypes keeps the first `Host` as the request's authority and any further one as a field.
    static func hostProblem(_ request: Request) -> ProblemDetails? {
        if request.head.authority == nil {
            return ProblemDetails(.badRequest, "the request has no Host header",
                                  detail: "send Host: the address you dialled (every HTTP/1.1 client does)")
        }
        if !request.headers[values: hostField].isEmpty {
            return ProblemDetails(.badRequest, "the request has more than one Host header", detail: "send exactly one Host header")
        }
        return nil
    }

    static let hostField = HTTPField.Name("Host")!
}
