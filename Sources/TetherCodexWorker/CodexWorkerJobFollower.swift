import Foundation
import Logging
import TetherCore
import TetherNet
import TetherStreaming
import TetherAdapterSupport

/// Follows one job's event stream to its `job.finished`. The worker never closes the stream,
/// so the follower does; it resumes after a drop with `cursor=<last seq>` (the worker ignores
/// Last-Event-ID) and drops duplicates by seq. When the worker has trimmed what it needs
/// (`409 CURSOR_EXPIRED`) it reconnects without a cursor — every retained event, then live —
/// and reports the seqs between the last one it had and the first one it got as lost. (Asking
/// for `firstSeq` first and then resuming from it races the trimming: on a busy job the events
/// were trimmed again by the time the request came, and the follower lost a few hundred events
/// at a time until the job ended.)
struct CodexWorkerJobFollower: Sendable {
    let backend: CodexWorkerBackend
    let job: String
    let thread: String?
    /// Resume after this seq (`events --since job:seq`); nil: from the first retained event.
    let since: Int64?
    /// Events carry their envelope as `raw` (`--raw`). Without it, delta and `item.started`
    /// envelopes are read straight from their bytes (`CodexWorkerHotEnvelope`), not parsed whole.
    var keepsRaw = true

    private var client: CodexWorkerClient { backend.client }

    /// `live: false` replays what the job has now (JSON) and returns. Returns the job's turn id
    /// (from its snapshot), when the worker gave one.
    @discardableResult
    func follow(mapper: inout CodexWorkerEventMapper, live: Bool, emit: ([Event]) async throws -> Void) async throws -> String? {
        let snapshot = try await backend.api("reading job \(job)") { try await client.get("/v1/jobs/\(PathSegment(job, what: "job id"))") }
        if let thread = thread ?? snapshot["threadId"]?.string { mapper.noteThread(thread, job: job) }
        let turn = snapshot["turnId"]?.string
        try await follow(snapshot: snapshot, mapper: &mapper, live: live, emit: emit)
        return turn
    }

    /// Runs `attempt` (this job's stream) again after a failure that may pass, on the reconnect
    /// schedule (`CodexWorkerStreamMachine.Retry` decides); 401/403 and other lasting failures
    /// end the stream at once.
    func retryingPassingFailures<T>(doing what: String, mapper: inout CodexWorkerEventMapper,
                                    emit: ([Event]) async throws -> Void,
                                    _ attempt: (inout CodexWorkerEventMapper) async throws -> T) async throws -> T {
        var retry = CodexWorkerStreamMachine.Retry(configuration: backend.configuration.reconnect)
        var random = SystemRandomNumberGenerator()
        while true {
            retry.attempting(lastSeq: mapper.lastSeq(of: job))
            do {
                return try await attempt(&mapper)
            } catch let error as TetherError where error.retryable && !Task.isCancelled {
                switch retry.failed(error, doing: what, lastSeq: mapper.lastSeq(of: job), at: .now, using: &random) {
                case .retry(let delay, let event):
                    try await emit([event])
                    try await Task.sleep(for: delay)
                case .stop:
                    throw error
                }
            }
        }
    }

    /// Performs the machine's actions, in order: the I/O of one job's stream.
    private func follow(snapshot: JSONValue, mapper: inout CodexWorkerEventMapper, live: Bool,
                        emit: ([Event]) async throws -> Void) async throws {
        var machine = CodexWorkerStreamMachine(job: job, thread: thread, keepsRaw: keepsRaw)
        var pending = machine.start(state: snapshot["state"]?.string, since: since, live: live, mapper: mapper)
        while !pending.isEmpty, !Task.isCancelled {
            let action = pending.removeFirst()
            switch action {
            case .emit(let events):
                try await emit(events)
            case .noteBoundReached(let note):
                backend.logger.warning("\(note)")
            case .finish:
                return
            case .refused(let status, let code):
                throw client.tetherError(.init(status: status, code: code, message: ""), doing: "streaming job \(job)")
            case .failed:
                break  // only `streamFailed` answers it, and `.connect` below throws the failure it has in hand
            case .readPage(let after):
                pending = try await readPage(after: after, machine: &machine, mapper: &mapper) + pending
            case .connect(let after):
                guard let failure = try await stream(after: after, machine: &machine, mapper: &mapper, emit: emit) else { return }
                let code = (try? JSONParser.parse(failure.body))?["error"]?["code"]?.string
                let answer = machine.streamFailed(status: failure.status, code: code, mapper: mapper)
                if answer.contains(.failed) { throw failure.tetherError(service: "the Codex Worker (profile \(client.configuration.profile))") }
                pending = answer + pending
            }
        }
    }

    /// The job's SSE stream from `?cursor=<after>` (or from its first retained event), each
    /// network read's elements handed to the machine and its actions performed, until the
    /// machine finishes (nil) or the stream fails (its failure, for the machine to answer).
    private func stream(after: Int64?, machine: inout CodexWorkerStreamMachine, mapper: inout CodexWorkerEventMapper,
                        emit: ([Event]) async throws -> Void) async throws -> NetError? {
        let jobSegment = try PathSegment(job, what: "job id")
        let start = after.map(String.init)
        let endpoint = client.configuration.baseURL
        let source = EventSource(client: client.http, configuration: .init(
            makeRequest: { [client, jobSegment] lastEventID in
                let query = (lastEventID ?? start).map { "?cursor=\($0)" } ?? ""
                return HTTPRequest(.get, client.url("/v1/jobs/\(jobSegment)/events\(query)"),
                                   headers: [("Accept", "text/event-stream")], authorization: client.authorization)
            },
            liveness: backend.configuration.streamLiveness,
            policy: ReconnectPolicy(configuration: backend.configuration.reconnect)))
        do {
            // Reading and decoding run ahead in a task of their own (another core); the kernel's
            // pump hands each element to the machine, and a network read's events go on as one batch.
            _ = try await pumpStream(decodingAhead: decodedWireBytesAhead, produce: { [keepsRaw, logger = backend.logger] channel in
                var elements = source.makeAsyncIterator()
                let strings = JSONStringTable(vocabulary: CodexWorkerHotEnvelope.busyWords)
                while let batch = try await elements.nextBatch() {
                    strings.startBatch()
                    try await channel.send(contentsOf: Self.decode(batch, keepsRaw: keepsRaw, strings: strings, logger: logger),
                                           weight: EventSource.wireBytes(of: batch))
                }
            }, leaving: Decoded.link(.connecting(attempt: 0)), isDone: { machine.finished }, feed: { element in
                machine.receive(element, endpoint: endpoint, mapper: &mapper)
            }, endOfBatch: {
                for action in machine.endOfBatch(mapper: &mapper) {
                    switch action {
                    case .emit(let events): try await emit(events)
                    case .noteBoundReached(let note): backend.logger.warning("\(note)")
                    default: break  // a batch only emits, notes and finishes (the pump stops at `finished`)
                    }
                }
            })
            return nil
        } catch let error as NetError {
            return error
        }
    }

    /// An element of the job's SSE stream, decoded away from the mapper's task.
    typealias Decoded = CodexWorkerStreamMachine.Decoded

    /// One network read's elements, decoded.
    static func decode(_ batch: [EventSource.Element], keepsRaw: Bool, strings: JSONStringTable, logger: Logger) -> [Decoded] {
        var decoded: [Decoded] = []
        decoded.reserveCapacity(batch.count)
        for element in batch {
            guard case .event(let sse) = element else {
                decoded.append(.link(element))
                continue
            }
            if !keepsRaw, let hot = CodexWorkerHotEnvelope.read(sse.dataBytes, strings: strings) {
                decoded.append(.hot(hot))
            } else if let envelope = try? JSONParser.parse(sse.dataBytes, strings: strings) {
                decoded.append(.envelope(envelope))
            } else {
                logger.warning("skipping a Codex Worker event that is not JSON", metadata: ["data": "\(sse.data.prefix(200))"])
            }
        }
        return decoded
    }

    /// One JSON page of the job's events, handed to the machine; a refusal it does not answer
    /// with another read ends the stream.
    private func readPage(after: Int64?, machine: inout CodexWorkerStreamMachine,
                          mapper: inout CodexWorkerEventMapper) async throws -> [CodexWorkerStreamMachine.Action] {
        let page: JSONValue
        do {
            page = try await client.get("/v1/jobs/\(PathSegment(job, what: "job id"))/events\(after.map { "?cursor=\($0)" } ?? "")")
        } catch let error as CodexWorkerClient.APIError {
            if let next = machine.pageRefused(code: error.code, after: after) { return [next] }
            throw client.tetherError(error, doing: "reading job \(job)")
        }
        return machine.replayed(page["data"]?.array ?? [], mapper: &mapper)
    }
}

/// `tether events` for the Codex Worker: one job (`--turn`, `--since job:seq`) or a thread
/// followed across its jobs (`--session`).
struct CodexWorkerEventStream: Sendable {
    let backend: CodexWorkerBackend
    let request: EventsRequest

    func run(emit: @escaping @Sendable ([Event]) async throws -> Void) async throws {
        var mapper = CodexWorkerEventMapper()
        var since: Int64?
        var job = request.turn
        if let cursor = request.since {
            guard let parsed = CodexWorkerEventMapper.parseCursor(cursor) else {
                throw TetherError(.usage, "\"\(cursor)\" is not a Codex Worker cursor (JOB:SEQ, from an event's \"cursor\")")
            }
            if let job, job != parsed.job {
                throw TetherError(.usage, "--since \(cursor) is in job \(parsed.job), not in --turn \(job)")
            }
            job = parsed.job
            since = parsed.seq
        }
        if let job {
            let follower = CodexWorkerJobFollower(backend: backend, job: job, thread: request.session, since: since, keepsRaw: request.raw)
            guard request.follow else {
                try await follower.follow(mapper: &mapper, live: false, emit: emit)
                return
            }
            // Followed, it outlasts a worker that is down for a moment, as a thread's jobs do.
            _ = try await follower.retryingPassingFailures(doing: "streaming job \(job)", mapper: &mapper, emit: emit) { mapper in
                try await follower.follow(mapper: &mapper, live: true, emit: emit)
            }
            return
        }
        guard let thread = request.session else {
            throw TetherError(.usage, "the codex-worker backend streams a thread or a job",
                              hint: "pass --session THREAD (follows its jobs) or --turn JOB")
        }
        guard request.follow else {
            var reported = false
            guard let entries = try await look(thread, reported: &reported, emit: emit) else { return }
            if let active = entries.last(where: { !$0.finished && !$0.isForgotten }) {
                try await CodexWorkerJobFollower(backend: backend, job: active.job, thread: thread, since: nil, keepsRaw: request.raw)
                    .follow(mapper: &mapper, live: false, emit: emit)
            }
            return
        }
        // Follow the thread: at each look, every job of its history this stream has not streamed
        // yet, oldest first (`CodexWorkerThreadJobs` decides; this loop only does the I/O).
        var jobs = CodexWorkerThreadJobs()
        var announcedWaiting = false
        var historyMissingReported = false
        // A look that fails for a reason that may pass (the worker restarting, a timeout) is
        // retried on the backend's reconnect schedule, as a dropped job stream is.
        var lookPolicy = ReconnectPolicy(configuration: backend.configuration.reconnect)
        while !Task.isCancelled {
            var steps: [CodexWorkerThreadJobs.Step] = []
            do {
                lookPolicy.connecting()
                if let entries = try await look(thread, reported: &historyMissingReported, emit: emit) {
                    steps = jobs.look(entries)
                }
                if lookPolicy.attempts > 0 { try await emit([.connection(.connected, endpoint: backend.client.configuration.baseURL)]) }
                lookPolicy.connected(at: .now)
                lookPolicy.madeProgress()
            } catch let error as TetherError where error.retryable {
                switch lookPolicy.failed(.transportError, at: .now) {
                case .reconnect(let delay, let attempt):
                    try await emit([.connection(.reconnecting, attempt: attempt,
                                               reason: "looking for the jobs of thread \(thread): \(error.message); retrying in \(delay.secondsText)")])
                    try await Task.sleep(for: delay)
                    continue
                case .stop:
                    throw error
                }
            }
            if steps.isEmpty {
                if !announcedWaiting {
                    announcedWaiting = true
                    try await emit([.sessionStatus(thread, .idle)])
                }
                try await Task.sleep(for: backend.configuration.jobPollInterval)
                continue
            }
            announcedWaiting = false
            for step in steps {
                switch step {
                case .stream(let job):
                    if mapper.hasFinished(job: job) { continue }
                    if let turn = try await stream(job: job, of: thread, mapper: &mapper, emit: emit) {
                        jobs.noteTurn(turn, ofJob: job)
                    }
                case .lost(let job, let turn):
                    try await emit([lost(job: job, turn: turn, thread: thread,
                                        why: "it ran while this stream was between looks, and the Codex Worker has restarted since and kept none of its events")])
                }
            }
        }
    }

    /// Streams one job of a followed thread to its end; returns its turn id, when the worker gave
    /// one. A failure that may pass (the worker restarting, a timeout, a 5xx) is retried here, on
    /// the reconnect schedule: `jobs.look` has already counted this job and those after it as
    /// handled, so leaving the retry to the next look would skip them. A retry resumes after the
    /// last seq the mapper has, so nothing comes twice; 401/403 and other lasting failures end
    /// the stream at once.
    private func stream(job: String, of thread: String, mapper: inout CodexWorkerEventMapper,
                        emit: ([Event]) async throws -> Void) async throws -> String? {
        let follower = CodexWorkerJobFollower(backend: backend, job: job, thread: thread, since: nil, keepsRaw: request.raw)
        return try await follower.retryingPassingFailures(doing: "streaming job \(job) of thread \(thread)", mapper: &mapper,
                                                          emit: emit) { mapper in
            do {
                return try await follower.follow(mapper: &mapper, live: true, emit: emit)
            } catch let error as TetherError where error.code == .notFound {
                // Named by the history a moment ago, gone now: the worker restarted in between.
                try await emit([lost(job: job, turn: nil, thread: thread, why: "the Codex Worker no longer has it (\(error.message))")])
                return nil
            }
        }
    }

    /// The `error` event for a job whose events cannot be streamed; never retryable.
    private func lost(job: String, turn: String?, thread: String, why: String) -> Event {
        let name = turn.map { "turn \($0) (job \(job))" } ?? "job \(job)"
        return .error(TetherError(.eventsLost, "the events of \(name) of thread \(thread) were lost: \(why)",
                                  hint: "its messages are in the thread's history: tether history \(thread)"),
                      session: thread, turn: job)
    }

    /// One look at the thread's jobs. A worker without thread history (an older or differently
    /// configured one: the route answers 404/405/501) cannot name the thread's jobs: that is said
    /// once, as an `error` event that is not retryable, and the stream stays open, looking again
    /// at each interval (a worker upgraded in place starts answering). Returns nil meanwhile.
    private func look(_ thread: String, reported: inout Bool,
                      emit: ([Event]) async throws -> Void) async throws -> [CodexWorkerThreadJobs.Entry]? {
        do {
            return CodexWorkerThreadJobs.entries(fromHistory: try await backend.threadEnvelopes(thread), thread: thread)
        } catch let missing as CodexWorkerBackend.MissingRoute {
            if !reported {
                reported = true
                backend.logger.info("this Codex Worker has no thread history route; jobs of the thread cannot be found",
                                    metadata: ["thread": "\(thread)", "status": "\(missing.status)", "code": "\(missing.code)"])
                try await emit([.error(missing.tetherError(doing: "finding the jobs of thread \(thread)",
                                                          hint: "follow one job instead: tether events --turn JOB --follow (tether send prints the job id)"),
                                      session: thread)])
            }
            return nil
        }
    }
}
