import FlyingFox
import FlyingSocks
import Foundation
import Logging

/// A faithful stand-in for the Codex Worker (`codex-worker-mvp`, a Node service in front of
/// `codex app-server`), written from `protocols/codex-worker.md`: the same routes, status and error
/// codes, event envelopes, cursor and retention rules, and the SSE stream that never closes by itself.
/// Turns follow scripts chosen by the prompt's words (see `Script`).
///
/// ```swift
/// let sim = CodexWorkerSimulator(options: .init(token: "secret"), logger: logger)
/// let url = try await sim.start()          // http://127.0.0.1:<free port>
/// …
/// await sim.stop()
/// ```
public final class CodexWorkerSimulator: Sendable {
    public struct Options: Sendable {
        /// The bearer token (`WORKER_TOKEN`); nil turns auth off, as an unset token does.
        public var token: String?
        /// Project paths (`WORKER_PROJECT_PATHS`); their ids are `proj_1`, `proj_2`, …
        public var projects: [String]
        /// Events kept per job (`WORKER_EVENT_RETENTION`). The real config rejects values under 100;
        /// the simulator takes any value ≥ 1 so tests can trim early.
        public var retention: Int
        /// Time between `: ping` comments on every SSE connection (real: 15 s).
        public var pingInterval: Duration
        /// Time between scripted events, on average (`Pacer`; 0 in tests; the demo uses 30–60 ms).
        public var pacing: Duration
        /// Fault: cut an SSE connection abruptly (no terminating chunk) once it has written this many
        /// event frames (replayed ones included). Comments do not count.
        public var dropStreamAfter: Int?
        /// With `dropStreamAfter`: false (default) cuts only the first SSE connection of each job, so a
        /// client that resumes with `?cursor=` then reads to the end; true cuts every connection.
        public var dropStreamRepeats: Bool
        /// Fault: the first history page asked for past the start (`cursor` > -1) answers 409
        /// `THREAD_CURSOR_EXPIRED`, as the real worker does when an active job's retained events
        /// collapse into a few history items between two pages.
        public var historyShrinksOnce: Bool
        /// Routes this worker does not have, as an older or differently configured worker: they
        /// answer the unknown-route 404 `NOT_FOUND` (see `Route`).
        public var lacks: Set<Route>
        /// Benchmarks: end a job's SSE stream cleanly (`: eof`, then the terminating chunk) once
        /// it has carried `job.finished`, so a buffered client (`curl | jq`) sees EOF and flushes.
        /// This is what the real worker's dead close branch meant to do (notes §2.5); the real
        /// worker never closes. Set after `init`.
        public var closeFinishedStreams = false

        public init(
            token: String? = nil,
            projects: [String] = ["/home/dev/demo"],
            retention: Int = 2000,
            pingInterval: Duration = .seconds(15),
            pacing: Duration = .zero,
            dropStreamAfter: Int? = nil,
            dropStreamRepeats: Bool = false,
            historyShrinksOnce: Bool = false,
            lacks: Set<Route> = []
        ) {
            self.token = token
            self.projects = projects
            self.retention = retention
            self.pingInterval = pingInterval
            self.pacing = pacing
            self.dropStreamAfter = dropStreamAfter
            self.dropStreamRepeats = dropStreamRepeats
            self.historyShrinksOnce = historyShrinksOnce
            self.lacks = lacks
        }
    }

    /// Optional routes a worker may lack.
    public enum Route: String, Sendable, Hashable, CaseIterable {
        /// `GET /v1/threads/{tid}/events` (thread history).
        case threadHistory = "thread-history"
        /// `POST /v1/threads/{tid}/archive|unarchive`; `GET /v1/threads` then ignores `archived`,
        /// as a handler that never reads the query does, and lists the active threads.
        case archive
    }

    /// One request as the simulator saw it, with the status it answered (200 for SSE streams).
    public struct RecordedRequest: Sendable {
        public let method: String
        public let path: String
        public let query: [String: String]
        /// Header names are lowercased.
        public let headers: [String: String]
        public let body: Data
        public let status: Int
    }

    public enum StartError: Error, CustomStringConvertible {
        case invalidHost(String)
        case alreadyStarted

        public var description: String {
            switch self {
            case .invalidHost(let host): "codex-worker simulator: cannot listen on \(host): give an IPv4 or IPv6 address"
            case .alreadyStarted: "codex-worker simulator: already started"
            }
        }
    }

    public let options: Options
    private let logger: Logger
    let store: Store
    private let listener = Listener()
    /// Set by `stop`: the listener's closing is not an error worth a warning (ServerLog).
    private let stopping = Locked(false)

    public init(options: Options = Options(), logger: Logger) {
        self.options = options
        self.logger = logger
        self.store = Store(options: options, logger: logger)
    }

    /// The base URL once started.
    public var url: URL? { listener.current?.url }

    /// Every request answered so far, oldest first.
    public var requestLog: [RecordedRequest] { store.requestLog }

    public func clearRequestLog() { store.clearRequestLog() }

    /// The worker's token changes (rotated `WORKER_TOKEN`): from now on the old one gets 401.
    public func rotateToken(to newToken: String) { store.token.withLock { $0 = newToken } }

    /// Starts listening (port 0 picks a free port) and returns the base URL, e.g. `http://127.0.0.1:53211`.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) async throws -> URL {
        guard listener.current == nil else { throw StartError.alreadyStarted }
        let address: any SocketAddress
        if host.contains(":") {
            guard let ip6 = try? sockaddr_in6.inet6(ip6: host, port: port) else { throw StartError.invalidHost(host) }
            address = ip6
        } else {
            let ip = host == "localhost" ? "127.0.0.1" : host
            guard let ip4 = try? sockaddr_in.inet(ip4: ip, port: port) else { throw StartError.invalidHost(host) }
            address = ip4
        }
        let server = HTTPServer(
            config: .init(address: address, timeout: 15, logger: ServerLog(logger: logger, stopping: stopping)),
            handler: Router(store: store)
        )
        let task = Task { try await server.run() }
        do {
            try await server.waitUntilListening(timeout: 5)
        } catch {
            task.cancel()
            _ = try await task.value
            throw error
        }
        let boundPort: UInt16
        switch await server.listeningAddress {
        case .ip4(_, let p), .ip6(_, let p): boundPort = p
        default: boundPort = port
        }
        let urlHost = host.contains(":") ? "[\(host)]" : host
        guard let url = URL(string: "http://\(urlHost):\(boundPort)") else { throw StartError.invalidHost(host) }
        listener.current = Listener.Running(server: server, task: task, host: host, port: boundPort, url: url)
        logger.info("codex-worker simulator listening on \(url.absoluteString)")
        return url
    }

    /// Stops listening, cuts every open SSE stream and stops the running scripts.
    public func stop() async {
        store.shutdown()
        guard let running = listener.take() else { return }
        stopping.withLock { $0 = true }
        await running.server.stop(timeout: 0)
        running.task.cancel()
        _ = try? await running.task.value
    }

    /// What a worker restart does to the state, without taking the listener down: every job and
    /// its events are forgotten (`hist_` ids in thread history, 404 for the jobs), open SSE
    /// connections are cut and a running turn is left interrupted. For a restart that happens
    /// between two requests of a client, at a moment the test chooses.
    public func forgetJobs() {
        store.restart()
    }

    /// Simulates a worker restart: all jobs and their events are lost (`/v1/jobs/…` → 404
    /// JOB_NOT_FOUND), open SSE connections are cut, threads survive (codex keeps them; their history
    /// now uses `hist_<threadId>_<turnId>` job ids), and a running turn is left interrupted. If the
    /// simulator was listening, it listens again on the same host and port.
    public func restart() async throws {
        let previous = listener.current
        if let previous {
            store.shutdown()
            _ = listener.take()
            await previous.server.stop(timeout: 0)
            previous.task.cancel()
            _ = try? await previous.task.value
        }
        store.restart()
        if let previous {
            // The old listener's port can take a moment to free (or be briefly held by a
            // connection elsewhere on a busy machine): retry the bind for a few seconds.
            var attempt = 0
            while true {
                do {
                    try await start(host: previous.host, port: previous.port)
                    return
                } catch {
                    attempt += 1
                    guard attempt < 50 else { throw error }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
        }
    }
}

extension CodexWorkerSimulator {
    /// The running server, if any.
    final class Listener: @unchecked Sendable {
        struct Running {
            let server: HTTPServer
            let task: Task<Void, any Error>
            let host: String
            let port: UInt16
            let url: URL
        }

        private let lock = NSLock()
        private var running: Running?

        var current: Running? {
            get { lock.withLock { running } }
            set { lock.withLock { running = newValue } }
        }

        func take() -> Running? {
            lock.withLock {
                defer { running = nil }
                return running
            }
        }
    }
}
