import TetherStreaming

/// A backend that can list the models its turns may name (`SendRequest.model`). Kept apart from
/// `Backend`: most backends cannot list models, and a backend that can adopts this as well.
public protocol ModelCatalog: Sendable {
    func listModels() async throws -> [ModelInfo]
}

/// A model a turn may name: `id` as `SendRequest.model` takes it, `name` for people.
public struct ModelInfo: Sendable, Equatable {
    public var id: String
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }

    public var json: JSONValue { ["id": .string(id), "name": .string(name)] }
}
