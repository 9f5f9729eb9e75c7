import Foundation
import Synchronization

/// Who may use the API: bearer tokens from the config, and the cookies `POST /v1/login` hands
/// out for them. With no tokens the API is open (only allowed on a loopback listen). A token is
/// never logged, echoed or stored outside memory.
public final class GatewayAuth: Sendable {
    public static let cookieName = "tether_session"
    private let tokens: [[UInt8]]
    private let sessions = Mutex<Set<String>>([])

    public init(tokens: [String]) {
        self.tokens = tokens.map { Array($0.utf8) }
    }

    public var isOpen: Bool { tokens.isEmpty }

    /// Whether `candidate` is one of the tokens; every token is compared in full, in constant
    /// time for a given length, so timing tells nothing about which bytes matched.
    public func accepts(token candidate: String) -> Bool {
        let bytes = Array(candidate.utf8)
        var matched = false
        for token in tokens { matched = Self.constantTimeEqual(token, bytes) || matched }
        return matched
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        let count = max(a.count, b.count)
        for index in 0..<count {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0
    }

    /// A new cookie value for a browser that presented a valid token.
    public func openSession() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        sessions.withLock { _ = $0.insert(value) }
        return value
    }

    public func acceptsSession(_ value: String) -> Bool {
        sessions.withLock { $0.contains(value) }
    }

    /// Logout: the value gets 401 from now on.
    public func revokeSession(_ value: String) {
        _ = sessions.withLock { $0.remove(value) }
    }
}
