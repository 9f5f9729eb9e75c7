import Hummingbird
import TetherCore

/// `GET /v1/profiles/{p}/models`: the models a turn (or a new session) may name, where the
/// backend can list them; elsewhere 404 with code `unsupported` (gateway.md).
extension GatewayAPI {
    func listModels(_ context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        guard let catalog = profile.backend as? any ModelCatalog else {
            throw ProblemDetails(.init(status: .notFound, code: "unsupported"),
                                 "the \(profile.kind.rawValue) backend of \(profile.name) cannot list models",
                                 detail: "start turns without a model (the backend's default) or name one the backend knows")
        }
        let models = try await calling("listing the models of \(profile.name)") { try await catalog.listModels() }
        return JSONResponse.ok(.array(models.map(\.json)))
    }
}
