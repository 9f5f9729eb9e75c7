import Hummingbird
import TetherCore

/// The notification backend's list and read state.
extension GatewayAPI {
    func notificationBackend(_ context: GatewayRequestContext) throws -> (ServedProfile, any NotificationBackend) {
        let profile = try profile(context)
        guard let backend = profile.backend as? any NotificationBackend else {
            throw ProblemDetails(.unsupported, "notifications are not supported by the \(profile.kind.rawValue) backend",
                                 detail: "only a notification profile has notifications; GET /v1/profiles shows each profile's backend")
        }
        return (profile, backend)
    }

    func listNotifications(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let (profile, backend) = try notificationBackend(context)
        let query = request.uri.queryParameters
        let unread = query.get("unread") == "true"
        let limit = try query.get("limit").map { try Self.integer($0, name: "limit", default: 0, range: 1...1000) }
        let list = try await calling("listing the notifications of \(profile.name)") {
            try await backend.listNotifications(unreadOnly: unread, limit: limit, offset: nil)
        }
        return JSONResponse.ok(.array(list.map(\.json)))
    }

    func readNotification(_ context: GatewayRequestContext) async throws -> Response {
        let (profile, backend) = try notificationBackend(context)
        let id = try pathID("notification", context)
        let result = try await calling("marking notification \(id) read in \(profile.name)") { try await backend.markRead(ids: [id]) }
        return JSONResponse.ok(.object(result))
    }

    func readAllNotifications(_ context: GatewayRequestContext) async throws -> Response {
        let (profile, backend) = try notificationBackend(context)
        let result = try await calling("marking every notification read in \(profile.name)") { try await backend.markAllRead() }
        return JSONResponse.ok(.object(result))
    }
}
