import TetherCore

extension OpenCodeBackend: ModelCatalog {
    /// Every model of every configured provider (`GET /config/providers`), as `provider/model`
    /// (what `send` takes), sorted by provider then model name.
    public func listModels() async throws -> [ModelInfo] {
        if try await isGeneration2() {
            return try await client2.list("/model", what: "the model list").compactMap(OpenCode2Facts.model(from:))
                .sorted { ($0.id.split(separator: "/").first ?? "", $0.name) < ($1.id.split(separator: "/").first ?? "", $1.name) }
        }
        let providers = try await client.get("/config/providers")["providers"]?.array ?? []
        var models: [ModelInfo] = []
        for provider in providers {
            guard let providerID = provider["id"]?.string, let listed = provider["models"]?.object else { continue }
            let providerName = provider["name"]?.string ?? providerID
            let named = listed.map { id, model in ModelInfo(id: "\(providerID)/\(id)", name: "\(providerName) · \(model["name"]?.string ?? id)") }
            models += named.sorted { $0.name < $1.name }
        }
        return models
    }
}
