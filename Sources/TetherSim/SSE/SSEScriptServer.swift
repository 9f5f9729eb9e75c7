import Foundation
import Logging

/// A generic in-process SSE server for transport tests, `tether sse` tests and benchmarks.
///
/// Routes (all SSE answers are `200`, `Content-Type: text/event-stream`, `Cache-Control: no-cache`):
/// - `GET /script/NAME` — the chunks registered with `setScript(_:_:)`, then a clean close (404 if unknown).
/// - `GET /flood?n=N&size=S` — N frames `id: i\ndata: {"i":i,"pad":"xx…"}\n\n` (i = 1…N, about S bytes
///   each, default 250), rendered before the first byte is written (the last flood is kept for a
///   request for the same one) and written in large batches as fast as the client reads; then a
///   clean close.
/// - `GET /paced?rate=R&n=N&size=S` (or `seconds=T` for N = R·T) — frames
///   `id: i\ndata: {"i":i,"sent_ns":NS}\n\n` at R per second (default 100), each stamped with the
///   wall-clock nanoseconds it was written (`PacedSchedule`), padded to about S bytes when S > 0;
///   N frames then a clean close (neither `n` nor `seconds`: forever). For latency benchmarks.
/// - `GET /resume?total=N&dropEvery=K` — frames `id: i\ndata: {"i":i}\n\n` for i after the request's
///   `Last-Event-ID` (0 if none) up to N; after K frames on one connection it closes abruptly
///   (truncated chunked body); after frame N it closes cleanly. K = 0 never drops.
/// - `GET /status/CODE` — that status, empty body for 1xx/204/304, else a short text body.
/// - `GET /redirect?to=PATH&code=30x` — a redirect (default 302) with `Location: PATH`; without `to`,
///   no `Location` header at all; with an empty `to=`, a `Location` header whose value is empty.
/// - `GET /notsse` — 200 `text/plain`.
/// - `GET /stall?after=N` — N frames, then silence with the connection held open.
/// - `GET /ticker?interval_ms=I&count=C` — a frame `id: i\ndata: {"i":i,"ts":"ISO-8601"}\n\n` every I ms
///   (default 1000), C frames then a clean close (no `count`: forever).
///
/// Every request is recorded with its headers (`requests`, `waitForRequest`).
public final class SSEScriptServer: Sendable {
    let http: EmbeddedHTTPServer
    let log = RequestLog()
    let scripts = Locked<[String: [SSEScriptChunk]]>([:])
    let floods = Locked<(count: Int, size: Int, bytes: Data)?>(nil)
    let logger: Logger

    public init(logger: Logger? = nil) {
        let logger = logger ?? .simulatorNoOp
        self.logger = logger
        let log = self.log
        let scripts = self.scripts
        let floods = self.floods
        self.http = EmbeddedHTTPServer(logger: logger) { request, streams in
            await SSEScriptRoutes(streams: streams, log: log, scripts: scripts, floods: floods).handle(request)
        }
    }

    /// Registers (or replaces) the script served at `GET /script/NAME`.
    public func setScript(_ name: String, _ chunks: [SSEScriptChunk]) {
        scripts.withLock { $0[name] = chunks }
    }

    /// Starts listening on `host` (loopback unless told); returns the base URL (`http://HOST:PORT`).
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) async throws -> URL {
        try await http.start(host: host, port: port)
    }

    /// Closes every open stream (abruptly) and the listener.
    public func stop() async {
        await http.stop()
    }

    /// The base URL while running.
    public var baseURL: URL? {
        http.baseURL
    }

    /// Every request received so far, in arrival order.
    public var requests: [RecordedRequest] {
        log.all
    }

    /// Waits until a request matching `predicate` has been received.
    public func waitForRequest(
        timeout: Duration = .seconds(5),
        where predicate: @escaping @Sendable (RecordedRequest) -> Bool
    ) async throws -> RecordedRequest {
        try await log.waitFor(timeout: timeout, predicate)
    }
}
