import TetherCore
/// One row of `tether profiles list`. JSON keys: `name`, `backend`, `endpoint`, `tunnel` (null when
/// direct), `default`.
public struct ProfileSummary: Sendable, Equatable, Encodable {
    public let name: String
    public let backend: BackendKind
    /// The backend's URL or `host:port`, as the profile names it.
    public let endpoint: String
    public let tunnel: String?
    public let isDefault: Bool

    public init(name: String, backend: BackendKind, endpoint: String, tunnel: String?, isDefault: Bool) {
        self.name = name
        self.backend = backend
        self.endpoint = endpoint
        self.tunnel = tunnel
        self.isDefault = isDefault
    }

    enum CodingKeys: String, CodingKey {
        case name, backend, endpoint, tunnel
        case isDefault = "default"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(backend, forKey: .backend)
        try container.encode(endpoint, forKey: .endpoint)
        try container.encode(tunnel, forKey: .tunnel) // null, not absent: every row has the same keys
        try container.encode(isDefault, forKey: .isDefault)
    }
}

extension ConfigFile {
    /// `profiles list`: every profile, sorted by name.
    public var profileSummaries: [ProfileSummary] {
        profileNames.compactMap { profiles[$0] }.map {
            ProfileSummary(name: $0.name, backend: $0.backend, endpoint: $0.endpoint, tunnel: $0.tunnel,
                           isDefault: $0.name == defaultProfile)
        }
    }
}
