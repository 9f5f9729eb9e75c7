import TetherAdapterSupport
import TetherCore

/// The remote profile's models (`GET /v1/profiles/P/models`), where its backend lists them: a
/// gateway fanning this one in offers them on its page as the remote one does.
extension GatewayBackend: ModelCatalog {
    public func listModels() async throws -> [ModelInfo] {
        guard let profile = scope.remote else {
            throw TetherError(.usage, "profile \(scope.local) stands for every profile of its gateway: whose models?",
                              hint: "set profiles.\(scope.local).remote_profile")
        }
        let listed = try await http.get("/v1/profiles/\(try PathSegment(profile, what: "profile"))/models", doing: "listing the models of \(profile)")
        return (listed.array ?? []).compactMap { model in
            model["id"]?.string.map { ModelInfo(id: $0, name: model["name"]?.string ?? $0) }
        }
    }
}
