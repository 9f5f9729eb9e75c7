import TetherCore
/// One `[profiles.NAME]` table: a backend, how to reach it, and optionally a tunnel.
public struct Profile: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    /// The `[tunnels.NAME]` this profile goes through; validated to exist when the file is loaded.
    public let tunnel: String?
    public let settings: BackendSettings
    /// `liveness` and `reconnect_delay`: how its streams detect a dead link and come back.
    public let connection: ConnectionTuning
    /// The config file the profile came from (for error messages about it later on).
    public let file: String

    public init(name: String, tunnel: String?, settings: BackendSettings, connection: ConnectionTuning = .backendDefaults,
                file: String) {
        self.name = name
        self.tunnel = tunnel
        self.settings = settings
        self.connection = connection
        self.file = file
    }

    public var backend: BackendKind { settings.kind }

    /// The backend's URL or `host:port`.
    public var endpoint: String { settings.endpoint }

    /// Every secret the profile holds, with its key: for callers that must resolve them all up front.
    public var secrets: [ConfiguredSecret] {
        switch settings {
        case .codexWorker(let settings): return [settings.token].compactMap { $0 }
        case .openCode(let settings): return [settings.password].compactMap { $0 }
        case .codex(let settings): return [settings.token].compactMap { $0 }
        case .codexMonitor(let settings): return [settings.token].compactMap { $0 }
        case .notification: return []
        case .gateway(let settings): return [settings.token].compactMap { $0 }
        }
    }

    /// Redacted: secrets never appear, however the profile is printed.
    public var description: String {
        "Profile(\(name), \(backend), \(endpoint)\(tunnel.map { ", tunnel \($0)" } ?? ""))"
    }
}
