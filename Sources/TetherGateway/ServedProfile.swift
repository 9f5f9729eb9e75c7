import Foundation
import Synchronization
import TetherCore
import TetherStreaming

/// One profile the gateway serves: its name, its backend, and the last connection state its
/// subscription reported (for `GET /v1/profiles`).
public final class ServedProfile: Sendable {
    public let name: String
    public let backend: any Backend
    /// What `GET /v1/profiles` and events say the backend is: the backend's own kind, or for a
    /// fanned-in gateway's profile the kind behind it (when known).
    public let shownKind: BackendKind
    private let connection = Mutex<JSONObject>(["state": "connecting"])

    public init(name: String, backend: any Backend, shownKind: BackendKind? = nil) {
        self.name = name
        self.backend = backend
        self.shownKind = shownKind ?? backend.kind
    }

    public var kind: BackendKind { backend.kind }

    public var connectionState: JSONObject { connection.withLock { $0 } }

    /// Keeps `since`: when the profile entered its current state (the page says "backend down
    /// since …"); a report of the same state again keeps the first time.
    func noteConnection(_ data: JSONObject, now: Double = Date().timeIntervalSince1970 * 1000) {
        connection.withLock { current in
            var data = data
            let same = current["state"]?.string == data["state"]?.string
            data["since"] = same ? current["since"] ?? .string(EventCodec.timestamp(milliseconds: now))
                : .string(EventCodec.timestamp(milliseconds: now))
            current = data
        }
    }

    /// Stamps an event with this profile, as the CLI's printer does. An event fanned in from
    /// another gateway keeps the backend it came from.
    func stamp(_ event: Event) -> Event {
        var event = event
        event.profile = name
        if kind != .gateway || event.backend == nil { event.backend = shownKind }
        return event
    }

    /// The profile's JSON in `GET /v1/profiles`.
    var json: JSONValue {
        .object([
            "name": .string(name), "backend": .string(shownKind.rawValue),
            "capabilities": JSONValue(backend.capabilities.names), "connection": .object(connectionState),
        ])
    }
}
