import Foundation
import TetherAdapterSupport
import TetherCore
import TetherNet

/// `events` through a gateway. Following reads `GET /v1/events` (SSE) and resumes with
/// `Last-Event-ID` after a drop, so the gateway replays from its log what happened meanwhile:
/// nothing is lost or repeated, and every event's cursor is the gateway's `seq`. Without
/// `--follow`, the log after the cursor is read page by page (the long-poll form) and the
/// stream ends at its end.
struct GatewayEventStream: Sendable {
    let backend: GatewayBackend
    let request: EventsRequest
    /// The gateway's `type` filter (a prefix like `notification.` matches the family).
    var types: [String] = []

    var http: GatewayHTTP { backend.http }
    var scope: GatewayRemoteScope { backend.scope }

    /// The stream's filter as query items: the remote profile and session.
    func filterQuery() throws -> [String] {
        var items: [String] = []
        if let session = request.session {
            let (profile, id) = try scope.resolve(session, what: "session id")
            items += ["profile=\(try GatewayBackend.query(profile))", "session=\(try GatewayBackend.query(id))"]
        } else if let remote = scope.remote {
            items.append("profile=\(try GatewayBackend.query(remote))")
        }
        return items + (try types.map { "type=\(try GatewayBackend.query($0))" })
    }

    func stream() -> EventStream {
        EventChannel.stream { channel in
            let filter = try filterQuery()
            if let since = request.since, Int64(since) == nil {
                throw TetherError(.usage, "--since \(since) is not a cursor of profile \(scope.local): its cursors are the gateway's seqs",
                                  hint: "pass the cursor of an event this profile printed, e.g. --since 1200")
            }
            if request.follow {
                try await follow(filter: filter, into: channel)
            } else {
                try await readLog(filter: filter, into: channel)
            }
        }
    }

    /// Whether `event` ends a `send --follow`: the turn's (or, when the gateway could not name
    /// the turn at once, the session's next) `turn.completed`.
    func ends(_ event: Event) -> Bool {
        guard request.untilTurnCompletes, event.type == .turnCompleted else { return false }
        if let turn = request.turn { return event.turn == turn }
        return request.session == nil || event.session == request.session
    }

    /// Whether `event` belongs in this stream: with a turn named, only that turn's.
    func wanted(_ event: Event) -> Bool {
        guard let turn = request.turn, let eventTurn = event.turn else { return true }
        return eventTurn == turn
    }

    func readLog(filter: [String], into channel: EventChannel) async throws {
        var since = request.since ?? "0"
        while true {
            let page = try await http.get("/v1/events?" + (filter + ["format=json", "limit=1000", "since=\(since)"]).joined(separator: "&"),
                                          doing: "reading its event log")
            guard let items = page["events"]?.array, let next = page["next"]?.int else {
                throw TetherError(.badData, "the gateway's long-poll answer has no events and next: \(page.serialized.prefix(200))")
            }
            var events: [Event] = []
            for item in items {
                let event = scope.localEvent(try GatewayHTTP.event(item, doing: "reading its event log"), seq: item["seq"]?.int.map(String.init))
                if wanted(event) { events.append(event) }
                if ends(event) {
                    try await channel.send(contentsOf: events)
                    return
                }
            }
            try await channel.send(contentsOf: events)
            if items.isEmpty || String(next) == since { return }
            since = String(next)
        }
    }

    func follow(filter: [String], into channel: EventChannel) async throws {
        let configuration = backend.configuration
        let path = "/v1/events" + (filter.isEmpty ? "" : "?" + filter.joined(separator: "&"))
        let source = EventSource(client: http.http, configuration: .init(
            makeRequest: { [http] lastEventID in
                var headers: [(name: String, value: String)] = [("Accept", "text/event-stream")]
                if let lastEventID { headers.append(("Last-Event-ID", lastEventID)) }
                return HTTPRequest(.get, http.url(path), headers: headers, authorization: http.authorization)
            },
            lastEventID: request.since,
            liveness: ReconnectPolicy.liveness(configuration.liveness, heartbeat: .seconds(15)),
            policy: ReconnectPolicy(configuration: configuration.reconnect)))
        do {
            for try await element in source {
                switch element {
                case .connecting(let attempt):
                    if attempt > 1 { try await channel.send(.connection(.reconnecting, attempt: attempt, endpoint: configuration.baseURL)) }
                case .open(_, let headers):
                    if let id = headers[GatewayIdentity.idHeader.lowercased()] {
                        let upstream = headers[GatewayIdentity.upstreamHeader.lowercased()]?.split(separator: ",").map(String.init) ?? []
                        if let loop = backend.loop(GatewayIdentity(id: id, upstream: upstream), refusing: configuration.refusedGateways) { throw loop }
                    }
                    try await channel.send(.connection(.connected, endpoint: configuration.baseURL))
                case .disconnected(let reason, let retryIn, let attempt):
                    try await channel.send(.connection(.reconnecting, attempt: attempt,
                                                       reason: (reason?.detail ?? "the stream ended") + "; retrying in \(retryIn.secondsText)"))
                case .comment:
                    break
                case .event(let sse):
                    // A line this tether cannot read (a proxy's garbage, a newer schema) is skipped
                    // as the other streams skip theirs; its seq still moves the cursor on.
                    guard let decoded = try? EventCodec.decode(sse.data) else {
                        backend.logger.warning("skipping a gateway event that cannot be read",
                                               metadata: ["seq": "\(sse.id)", "data": "\(sse.data.prefix(200))"])
                        continue
                    }
                    let event = scope.localEvent(decoded, seq: sse.id.isEmpty ? nil : sse.id)
                    if wanted(event) { try await channel.send(event) }
                    if ends(event) { return }
                }
            }
        } catch let error as NetError {
            throw error.kind == .status(401) || error.kind == .status(403)
                ? http.authenticationError(status: error.status ?? 401) : error.tetherError(service: http.service)
        }
    }
}
