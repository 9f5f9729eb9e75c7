import Hummingbird
import Logging

/// Turns every error a route throws into `application/problem+json`, including Hummingbird's own
/// (an unknown route, a body too large), a fleet's database that does not answer (503), and
/// anything unexpected (500, details only in the log).
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as ProblemDetails {
            return problem.response()
        } catch let error as HTTPError {
            let kind: ProblemDetails.Kind = switch error.status {
            case .notFound: .notFound
            case .unauthorized: .unauthorized
            case .forbidden: .forbidden
            case .contentTooLarge: .payloadTooLarge
            case .methodNotAllowed: ProblemDetails.Kind.methodNotAllowed
            default: .badRequest
            }
            let title = error.status == .notFound ? "no such route" : (error.body ?? error.status.reasonPhrase)
            return ProblemDetails(kind, title, detail: "\(request.method) \(request.uri.path): see GET /v1/openapi.json for the routes").response()
        } catch let error as DatabaseUnanswered {
            logger.warning("a request failed: the event log's database did not answer", metadata: ["path": "\(request.uri.path)"])
            return ProblemDetails(.logUnavailable, "the event log's database did not answer", detail: "\(error)").response()
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.error("request failed unexpectedly", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return ProblemDetails(.internalError, "internal error", detail: "the gateway's log (stderr) has the details").response()
        }
    }
}
