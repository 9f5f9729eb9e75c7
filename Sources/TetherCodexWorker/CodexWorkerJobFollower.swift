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

    /// Runs `attempt` (this job's stream) again after a failure that may pass (the worker
    /// restarting, a timeout, a 5xx), on the reconnect schedule, saying so with a `connection.state`
    /// reconnecting line; the mapper keeps the last seq, so a retry resumes after it and nothing
    /// comes twice. 401/403 and other lasting failures end the stream at once.
    func retryingPassingFailures<T>(doing what: String, mapper: inout CodexWorkerEventMapper,
                                    emit: ([Event]) async throws -> Void,
                                    _ attempt: (inout CodexWorkerEventMapper) async throws -> T) async throws -> T {
        var policy = ReconnectPolicy(configuration: backend.configuration.reconnect)
        while true {
            policy.connecting()
            let seqBefore = mapper.lastSeq(of: job)
            do {
                return try await attempt(&mapper)
            } catch let error as TetherError where error.retryable && !Task.isCancelled {
                // Events arrived before this failure: it is a fresh one, not one more in a row.
                if mapper.lastSeq(of: job) != seqBefore { policy.madeProgress() }
                switch policy.failed(.transportError, at: .now) {
                case .reconnect(let delay, let attempt):
                    try await emit([.connection(.reconnecting, attempt: attempt,
                                               reason: "\(what): \(error.message); retrying in \(delay.secondsText)")])
                    try await Task.sleep(for: delay)
                case .stop:
                    throw error
                }
            }
        }
    }

    private func follow(snapshot: JSONValue, mapper: inout CodexWorkerEventMapper, live: Bool,
                        emit: ([Event]) async throws -> Void) async throws {
        var cursor = mapper.lastSeq(of: job) ?? since ?? -1
        let terminal = ["DONE", "FAILED", "CANCELLED"].contains(snapshot["state"]?.string ?? "")
        if mapper.hasFinished(job: job) { return }

        if !live || (terminal && since != nil && mapper.lastSeq(of: job) == nil) {
            // A terminal job resumed from a cursor may already be past its job.finished, and the
            // worker never closes the stream: one JSON replay is the whole story. From the start,
            // the stream's replay ends with job.finished, so it streams (in bounded memory).
            try await replay(after: cursor, mapper: &mapper, emit: emit)
            return
        }

        let jobSegment = try PathSegment(job, what: "job id")
        // nil after a 409: from the first retained event.
        var resumeAfter: Int64? = cursor
        while !Task.isCancelled {
            let start = resumeAfter.map(String.init)
            let source = EventSource(client: client.http, configuration: .init(
                makeRequest: { [client, jobSegment] lastEventID in
                    let query = (lastEventID ?? start).map { "?cursor=\($0)" } ?? ""
                    return HTTPRequest(.get, client.url("/v1/jobs/\(jobSegment)/events\(query)"),
                                       headers: [("Accept", "text/event-stream")], authorization: client.authorization)
                },
                liveness: backend.configuration.streamLiveness,
                policy: ReconnectPolicy(configuration: backend.configuration.reconnect)))
            do {
                // Reading and decoding run ahead in a task of their own (another core); what one
                // network read brought is mapped here whole and handed on as one batch.
                try await withPipelineStage(capacity: decodedWireBytesAhead, produce: { [keepsRaw, logger = backend.logger] channel in
                    var elements = source.makeAsyncIterator()
                    let strings = JSONStringTable(vocabulary: CodexWorkerHotEnvelope.busyWords)
                    while let batch = try await elements.nextBatch() {
                        strings.startBatch()
                        try await channel.send(contentsOf: Self.decode(batch, keepsRaw: keepsRaw, strings: strings, logger: logger),
                                               weight: EventSource.wireBytes(of: batch))
                    }
                }, consume: { channel in
                    while var batch = try await channel.next() {
                        var gathered: [Event] = []
                        gathered.reserveCapacity(batch.count)
                        var finished = false
                        for index in batch.indices where !finished {
                            // Moved out, not copied: a copy retains every string the decoding
                            // task made (`Array.moveOut`).
                            switch batch.moveOut(at: index, leaving: .link(.connecting(attempt: 0))) {
                            case .link(.connecting(let attempt)):
                                if attempt > 1 { gathered.append(.connection(.reconnecting, attempt: attempt, endpoint: client.configuration.baseURL)) }
                            case .link(.open):
                                gathered.append(.connection(.connected, endpoint: client.configuration.baseURL))
                            case .link(.disconnected(let reason, let retryIn, let attempt)):
                                gathered.append(.connection(.reconnecting, attempt: attempt,
                                                            reason: (reason?.detail ?? "the stream ended") + "; retrying in \(retryIn.secondsText)"))
                            case .link:
                                break  // `: connected`, `: ping` — the liveness watchdog already saw the bytes
                            case .hot(let hot):
                                if let seq = hot.seq {
                                    if let gap = gapEvent(after: cursor, before: seq) { gathered.append(gap) }
                                    cursor = max(cursor, seq)
                                }
                                mapper.map(hot, into: &gathered)
                            case .envelope(let envelope):
                                if let seq = envelope["seq"]?.int {
                                    if let gap = gapEvent(after: cursor, before: seq) { gathered.append(gap) }
                                    cursor = max(cursor, seq)
                                }
                                gathered += withRaw(mapper.map(envelope), envelope)
                                finished = envelope["type"]?.string == "job.finished"
                            }
                        }
                        try await emit(gathered)
                        if let note = mapper.boundNote() { backend.logger.warning("\(note)") }
                        if finished { return }
                    }
                })
                return
            } catch let error as NetError {
                cursor = mapper.lastSeq(of: job) ?? cursor
                let code = (try? JSONParser.parse(error.body))?["error"]?["code"]?.string
                switch (error.status, code) {
                case (409?, "CURSOR_EXPIRED"?):
                    resumeAfter = nil
                case (404?, _):
                    try await emit([.error(TetherError(.eventsLost, "job \(job) is gone from the Codex Worker (404 \(code ?? "JOB_NOT_FOUND")): it was restarted and kept nothing after seq \(cursor)",
                                            hint: "thread history survives: tether history \(thread ?? "THREAD")"),
                                session: thread, turn: job)])
                    return
                case (401?, _), (403?, _):
                    throw client.tetherError(.init(status: error.status!, code: code ?? "UNAUTHORIZED", message: ""), doing: "streaming job \(job)")
                default:
                    throw error.tetherError(service: "the Codex Worker (profile \(client.configuration.profile))")
                }
            }
        }
    }

    /// An element of the job's SSE stream, decoded away from the mapper's task.
    enum Decoded: Sendable {
        /// A change of the link, or a comment.
        case link(EventSource.Element)
        /// A delta or `item.started` envelope read straight from its bytes (without `--raw`).
        case hot(CodexWorkerHotEnvelope)
        case envelope(JSONValue)
    }

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

    /// Events between `cursor` (the last seq we have) and `seq` (the one that arrived) were
    /// trimmed before we could read them: say exactly which.
    private func reportGap(after cursor: Int64, before seq: Int64, emit: ([Event]) async throws -> Void) async throws {
        if let gap = gapEvent(after: cursor, before: seq) { try await emit([gap]) }
    }

    private func gapEvent(after cursor: Int64, before seq: Int64) -> Event? {
        guard seq > cursor + 1 else { return nil }
        let count = seq - cursor - 1
        let seqs = count == 1 ? "seq \(cursor + 1)" : "seq \(cursor + 1)…\(seq - 1)"
        return .error(TetherError(.eventsLost, "\(count) event\(count == 1 ? "" : "s") of job \(job) \(count == 1 ? "was" : "were") lost (\(seqs)): the Codex Worker no longer keeps them",
                                  hint: "the job's final state still arrives; tether history shows the thread's messages"),
                      session: thread, turn: job)
    }

    /// The job's events after `cursor` as one JSON page; from the first retained one when the
    /// worker no longer has them all. The gap is worked out from the seqs the page holds, so it
    /// is exact even for a job that is still running.
    private func replay(after cursor: Int64, mapper: inout CodexWorkerEventMapper, emit: ([Event]) async throws -> Void) async throws {
        let page: JSONValue
        do {
            do {
                page = try await client.get("/v1/jobs/\(PathSegment(job, what: "job id"))/events?cursor=\(cursor)")
            } catch let error as CodexWorkerClient.APIError where error.code == "CURSOR_EXPIRED" {
                page = try await client.get("/v1/jobs/\(PathSegment(job, what: "job id"))/events")
            }
        } catch let error as CodexWorkerClient.APIError {
            throw client.tetherError(error, doing: "reading job \(job)")
        }
        var last = cursor
        for envelope in page["data"]?.array ?? [] {
            if let seq = envelope["seq"]?.int {
                try await reportGap(after: last, before: seq, emit: emit)
                last = max(last, seq)
            }
            try await emit(withRaw(mapper.map(envelope), envelope))
        }
        if let note = mapper.boundNote() { backend.logger.warning("\(note)") }
    }

    /// `events`, each carrying `envelope` as its wire message when `raw` is kept.
    private func withRaw(_ events: [Event], _ envelope: JSONValue) -> [Event] {
        guard keepsRaw else { return events }
        var events = events
        for index in events.indices where events[index].raw == nil { events[index].raw = envelope }
        return events
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
