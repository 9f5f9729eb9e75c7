import TetherAdapterSupport
import TetherCore
import TetherStreaming

/// `tether notifications` through a gateway: what its API offers for a notification profile
/// (the list, read state, and `watch` from its log); the rest acts on the desktop itself, so it
/// is refused with where to run it.
extension GatewayBackend: NotificationBackend {
    func notificationsPath(_ rest: String = "") throws -> String {
        guard let profile = scope.remote else {
            throw TetherError(.usage, "profile \(scope.local) stands for every profile of its gateway: whose notifications?",
                              hint: "set profiles.\(scope.local).remote_profile to the gateway's notification profile")
        }
        return "/v1/profiles/\(try PathSegment(profile, what: "profile"))/notifications" + rest
    }

    func notOnAGateway(_ what: String) -> TetherError {
        TetherError.unsupported("\(what) through a gateway", backend: .gateway,
                                hint: "run it with a notification profile on the gateway's machine")
    }

    public func listNotifications(unreadOnly: Bool, limit: Int?, offset: Int?) async throws -> [Notification] {
        guard offset == nil else { throw notOnAGateway("--offset") }
        let query = ([unreadOnly ? "unread=true" : nil, limit.map { "limit=\($0)" }].compactMap { $0 }).joined(separator: "&")
        let listed = try await http.get(try notificationsPath(query.isEmpty ? "" : "?" + query), doing: "listing notifications")
        return (listed.array ?? []).compactMap(Notification.init(json:))
    }

    public func unreadCount() async throws -> Int {
        try await listNotifications(unreadOnly: true, limit: 1000, offset: nil).count
    }

    public func markRead(ids: [String]) async throws -> JSONObject {
        var result: JSONObject = [:]
        for id in ids {
            let answer = try await http.post(try notificationsPath("/\(try PathSegment(id, what: "notification id"))/read"), body: .object([:]),
                                             doing: "marking notification \(id) read")
            for entry in answer.object ?? [:] { result[entry.key] = entry.value }
        }
        return result
    }

    public func markAllRead() async throws -> JSONObject {
        try await http.post(try notificationsPath("/read-all"), body: .object([:]), doing: "marking every notification read").object ?? [:]
    }

    public func deleteNotification(id: String) async throws -> JSONObject { throw notOnAGateway("deleting a notification") }
    public func clearNotifications() async throws -> JSONObject { throw notOnAGateway("clearing notifications") }
    public func settings(set: [String: String]) async throws -> JSONObject { throw notOnAGateway("notification settings") }
    public func sendNotification(title: String, body: String, priority: String?) async throws -> JSONObject {
        throw notOnAGateway("sending a notification")
    }
    public func push(title: String, body: String, device: String?) async throws -> JSONObject { throw notOnAGateway("pushing") }
    public func broadcast(title: String, body: String) async throws -> JSONObject { throw notOnAGateway("broadcasting") }

    /// The gateway's `notification.received` events, live, resumed by seq after a drop.
    public func watch() -> EventStream {
        GatewayEventStream(backend: self, request: EventsRequest(follow: true), types: ["notification."]).stream()
    }

    /// Nothing waits here: the gateway's own notification profile keeps its queue.
    public func pendingQueue() -> [JSONObject] { [] }
}
