import TetherCore
import TetherAdapterSupport
import TetherNet
import TetherStreaming

/// OpenCode 2.x's REST surface (protocols/opencode-v2.md §2–§3): every route under `/api`,
/// Basic auth as user `opencode` on every request, answers unwrapped from `{data}`, tagged
/// errors (`{_tag, message}`) turned into `TetherError`s by the 1.x client's mapping (it reads
/// `_tag` already). The profile's directory is not a query here: 2.x scopes by session, and
/// lists and creates name it themselves (`?directory=`, body `location.directory`).
struct OpenCode2Client: Sendable {
    let rest: OpenCodeClient

    init(_ v1: OpenCodeClient) {
        var configuration = v1.configuration
        configuration.username = OpenCode2Facts.username
        configuration.directory = nil
        rest = OpenCodeClient(configuration: configuration, http: v1.http)
    }

    /// `path` under `/api` (`/session` → `/api/session`); the `{data}` payload.
    func get(_ path: String) async throws -> JSONValue {
        OpenCode2WireDecoder.payload(try await rest.call(.get, "/api" + path, body: nil, scoped: false))
    }

    func post(_ path: String, body: JSONValue?) async throws -> JSONValue {
        OpenCode2WireDecoder.payload(try await rest.call(.post, "/api" + path, body: body, scoped: false))
    }

    func delete(_ path: String) async throws {
        _ = try await rest.call(.delete, "/api" + path, body: nil, scoped: false)
    }

    /// A list route's items; a clear error when the answer is not a list.
    func list(_ path: String, what: String) async throws -> [JSONValue] {
        try Self.items(of: try await rest.call(.get, "/api" + path, body: nil, scoped: false), what: what)
    }

    private static func items(of body: JSONValue, what: String) throws(TetherError) -> [JSONValue] {
        do {
            return try OpenCode2WireDecoder.list(body, what: what)
        } catch {
            throw TetherError(.badData, error.description)
        }
    }

    /// Every item of a paginated list route (`{data, cursor: {next?}}`), page after page, up
    /// to `limit` items: `path` with `query`, then `&cursor=` the last page's `next` with
    /// `query` alone. `firstQuery` goes on the first page only (`order`: the server refuses it
    /// beside a cursor, which carries it).
    func listAll(_ path: String, query: String, firstQuery: String? = nil, what: String, limit: Int) async throws -> [JSONValue] {
        var items: [JSONValue] = []
        var next: String?
        repeat {
            let page = next.map { "\(path)?\(query)&cursor=\(OpenCodeBackend.queryValue($0))" }
                ?? "\(path)?\(query)" + (firstQuery.map { "&" + $0 } ?? "")
            let body = try await rest.call(.get, "/api" + page, body: nil, scoped: false)
            items += try Self.items(of: body, what: what)
            next = body["cursor"]?["next"]?.string
        } while next != nil && items.count < limit
        return Array(items.prefix(limit))
    }

    /// The durable log of `session` after `seq`, read to its `log.synced` marker: its frames
    /// decoded, oldest first, the marker last when the server sent it. Read as a stream and
    /// closed at the marker, so it works whether the server ends a log without `follow` there
    /// (the simulator) or goes on (`OpenCode2Facts.logPath`). Frames that cannot be read are
    /// returned as errors for the caller to log.
    func readLog(session: String, after seq: Int) async throws -> [Result<OpenCode2WireEvent, OpenCode2WireError>] {
        let url = rest.url(OpenCode2Facts.logPath(session: try PathSegment(session), after: seq, follow: false), scoped: false)
        let request = HTTPRequest(.get, url, headers: [("Accept", "text/event-stream")], authorization: rest.authorization,
                                  connectTimeout: .seconds(10))
        var decoder = SSEDecoder()
        var frames: [Result<OpenCode2WireEvent, OpenCode2WireError>] = []
        do {
            let stream = try await rest.http.stream(request, requireEventStream: false, liveness: Self.logLiveness)
            defer { stream.cancel() }
            for try await chunk in stream {
                for output in decoder.feed(chunk) {
                    guard case .event(let sse) = output else { continue }
                    do {
                        let frame = try OpenCode2WireDecoder.decode(sse.dataBytes)
                        frames.append(.success(frame))
                        if frame.isSyncedMarker { return frames }
                    } catch {
                        frames.append(.failure(error))
                    }
                }
            }
        } catch let error as NetError {
            throw rest.mapTransport(error)
        }
        return frames
    }

    /// A log read that brings nothing for this long (no frame, no heartbeat) has failed.
    static let logLiveness: Duration = .seconds(45)
}
