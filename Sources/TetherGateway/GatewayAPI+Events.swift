import HTTPTypes
import Hummingbird
import NIOCore
import TetherCore

/// `GET /v1/events`: SSE by default, long-poll JSON with `format=json`.
extension GatewayAPI {
    func filter(_ request: Request) -> EventQuery {
        let query = request.uri.queryParameters
        return EventQuery(profiles: Set(query.getAll("profile")), session: query.get("session"), types: query.getAll("type"))
    }

    func events(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        if query.get("format") == "json" { return try await longPoll(request) }
        let cursor = try EventStreamCursor.parse(lastEventID: request.headers[HTTPFields.lastEventID], since: query.get("since"))
        let streamer = EventStreamer(journal: journal, filter: filter(request), cursor: cursor, heartbeat: heartbeat)
        // Subscribed now, before the replay is read, so nothing appended meanwhile is missed.
        let subscription = streamer.subscribe()
        let channel = context.channel
        let logger = logger
        subscription.onOverflow {
            logger.notice("closing a slow event-stream client; it resumes from the log with Last-Event-ID")
            channel.close(promise: nil)
        }
        // A stream opened with a login cookie ends with the login (logout, expiry).
        if let cookie = context.sessionCookie {
            guard let registration = auth.attachStream(to: cookie, close: { channel.close(promise: nil) }) else {
                subscription.cancel()
                throw ProblemDetails(.unauthorized, "the login ended", detail: "log in again with POST /v1/login")
            }
            let auth = auth
            channel.closeFuture.whenComplete { _ in auth.forget(registration) }
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        // Tells nginx-style proxies not to buffer the stream.
        headers[HTTPFields.accelBuffering] = "no"
        headers[HTTPFields.gatewayID] = identity.id
        headers[HTTPFields.gatewayUpstream] = identity.upstream.joined(separator: ",")
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await streamer.stream(subscription, live: EventStreamSink(channel: channel)) { frames in
                try await writer.write(contentsOf: frames)
            }
            try await writer.finish(nil)
        })
    }

    /// `format=json&since=SEQ&limit=N&wait=SECONDS`: `{"events":[…],"next":SEQ}`.
    func longPoll(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let filter = filter(request)
        let log = journal.log
        var since: Int64
        if let text = query.get("since") {
            guard let value = Int64(text), value >= 0 else {
                throw ProblemDetails(.badRequest, "since must be a seq", detail: "pass since as the non-negative seq of an event (or omit it for the current end)")
            }
            since = value
        } else {
            since = try await log.lastSeq()
        }
        let limit = try Self.integer(query.get("limit"), name: "limit", default: 100, range: 1...1000)
        let wait = try Self.integer(query.get("wait"), name: "wait", default: 0, range: 0...60)

        var items: [String] = []
        let page = try await log.page(after: since, matching: filter, limit: limit)
        var found = page.events
        if let expired = EventStreamer.expiry(of: since, in: page, first: true) {
            items.append(expired.jsonWithSeq)
            since = expired.seq
            found = try await log.events(after: since, matching: filter, limit: limit - 1)
        }
        if found.isEmpty, items.isEmpty, wait > 0 {
            let subscription = journal.broadcast.subscribe(matching: filter)
            defer { subscription.cancel() }
            // Read again after subscribing: an event appended in between is in one of the two.
            found = try await log.events(after: since, matching: filter, limit: limit)
            if found.isEmpty {
                let arrived = await Self.firstMatch(in: subscription, after: since, within: .seconds(wait))
                if arrived { found = try await log.events(after: since, matching: filter, limit: limit) }
            }
        }
        items += found.map(\.jsonWithSeq)
        let next = found.last?.seq ?? since
        return JSONResponse.raw("{\"events\":[" + items.joined(separator: ",") + "],\"next\":\(next)}")
    }

    static func firstMatch(in subscription: EventSubscription, after since: Int64, within timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                while let batch = await subscription.next() {
                    // The subscription applies `filter`: what it queues matches.
                    for case .event(let seq, _) in batch where seq > since { return true }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            subscription.cancel()
            return first
        }
    }

    static func integer(_ text: String?, name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw ProblemDetails(.badRequest, "\(name) is out of range",
                                 detail: "\(name) takes an integer from \(range.lowerBound) to \(range.upperBound); got \"\(text.prefix(20))\"")
        }
        return number
    }
}
