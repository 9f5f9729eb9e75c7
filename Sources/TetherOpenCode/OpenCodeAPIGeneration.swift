import TetherCore
import TetherStreaming

/// Which generation of OpenCode's HTTP API a server speaks, as far as Tether must know
/// (protocols/opencode.md §0). Told from what the server answers, once per connection: the V1
/// API lists pending permissions at `GET /permission`; the legacy Hono server has no such route.
enum OpenCodeAPIGeneration: String, Sendable {
    /// The Hono server (0.x – ~1.0): permissions are only announced on the stream
    /// (`permission.updated`) and answered at `POST /session/{id}/permissions/{permissionID}`.
    case legacy
    /// The V1 API (later 1.x): pending permissions and questions are listed over REST and
    /// answered at `POST /permission/{id}/reply`.
    case v1

    /// `permissionList`: what `GET /permission` gave, nil when the server has no such route.
    init(permissionList: JSONValue?) {
        self = permissionList == nil ? .legacy : .v1
    }
}
