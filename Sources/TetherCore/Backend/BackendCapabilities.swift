import TetherStreaming

/// What a backend can do. The CLI checks a command against these before it runs it, so an
/// unsupported command fails at once with a clear message (exit 64) instead of deep in an adapter.
public struct BackendCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let sessions = BackendCapabilities(rawValue: 1 << 0)
    public static let createSession = BackendCapabilities(rawValue: 1 << 1)
    public static let history = BackendCapabilities(rawValue: 1 << 2)
    public static let send = BackendCapabilities(rawValue: 1 << 3)
    public static let events = BackendCapabilities(rawValue: 1 << 4)
    /// `events --since CURSOR`: the backend can replay from a point.
    public static let resume = BackendCapabilities(rawValue: 1 << 5)
    public static let approvals = BackendCapabilities(rawValue: 1 << 6)
    public static let abort = BackendCapabilities(rawValue: 1 << 7)
    public static let notifications = BackendCapabilities(rawValue: 1 << 8)
    /// `sessions archive` / `sessions unarchive`.
    public static let archive = BackendCapabilities(rawValue: 1 << 9)
    /// `approve ID --answer …`: a question (an approval of kind question) is answered with its choices.
    public static let questions = BackendCapabilities(rawValue: 1 << 10)

    public static let all: [(BackendCapabilities, String)] = [
        (.sessions, "sessions"), (.createSession, "sessions.create"), (.history, "history"), (.send, "send"),
        (.events, "events"), (.resume, "resume"), (.approvals, "approvals"), (.abort, "abort"),
        (.notifications, "notifications"), (.archive, "sessions.archive"), (.questions, "approvals.questions"),
    ]

    public var names: [String] { Self.all.filter { contains($0.0) }.map(\.1) }
}

/// The result of `tether check`.
public struct CheckReport: Sendable {
    public var endpoint: String
    public var reachable: Bool
    public var authenticated: Bool
    public var version: String?
    public var details: JSONObject

    public init(endpoint: String, reachable: Bool, authenticated: Bool, version: String? = nil, details: JSONObject = [:]) {
        self.endpoint = endpoint
        self.reachable = reachable
        self.authenticated = authenticated
        self.version = version
        self.details = details
    }
}
