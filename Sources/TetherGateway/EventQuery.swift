/// What a client asks of `GET /v1/events` (and its long-poll form): profiles (any of), one session,
/// types (any of; a value ending in "." such as `approval.` matches the whole family).
public struct EventQuery: Sendable, Equatable {
    public var profiles: Set<String>
    public var session: String?
    public var types: [String]

    public init(profiles: Set<String> = [], session: String? = nil, types: [String] = []) {
        self.profiles = profiles
        self.session = session
        self.types = types
    }

    public func matches(_ event: LoggedEvent) -> Bool {
        if !profiles.isEmpty, !profiles.contains(event.profile ?? "") { return false }
        if let session, event.session != session { return false }
        if !types.isEmpty, !types.contains(where: { Self.type(event.type, matches: $0) }) { return false }
        return true
    }

    /// `approval.` and `approval` both match `approval.requested`; `part.delta` matches only itself.
    static func type(_ type: String, matches pattern: String) -> Bool {
        if type == pattern { return true }
        let family = pattern.hasSuffix(".") ? pattern : pattern + "."
        return type.hasPrefix(family)
    }
}
