import TetherCore
import TetherNet
import TetherStreaming

/// One Codex Worker job's stream rules, as a pure state machine (the shape of
/// `OpenCodeStreamMachine` and `CodexAppServerStreamMachine`): what happened goes in — the job's
/// snapshot, each decoded stream element and the end of its network read, a replayed page, a
/// failed request — and what to do comes out as actions, which `CodexWorkerJobFollower` (the
/// I/O loop, on the kernel's `pumpStream`) performs.
///
/// The rules (adapters.md, Codex Worker):
/// - The cursor is the last seq this stream has of the job (-1: none yet, which the worker reads
///   as "from its first event"). It only goes forward; a resume asks for `cursor=<it>` (the
///   worker ignores Last-Event-ID).
/// - A seq more than one past the cursor means the worker trimmed the seqs in between before we
///   read them: they are reported, exactly, as one `eventsLost` error, then the stream goes on.
/// - `409 CURSOR_EXPIRED`: the worker no longer keeps what follows the cursor. Reconnect without
///   a cursor (every retained event, then live); the gap rule reports what was lost. (Asking for
///   `firstSeq` and resuming from it races the trimming on a busy job.)
/// - `404`: the job is gone (the worker restarted and kept nothing): said once, and the stream
///   of this job ends. 401/403 end it at once as refused; any other failure is the transport's.
/// - `job.finished` ends the job's stream (the worker never closes it): the batch that held it
///   is emitted, then finish. A job already finished in this stream is not followed again.
/// - Not live, or a terminal job resumed from a cursor (it may be past its `job.finished`): one
///   JSON page is the whole story; a page refused with `CURSOR_EXPIRED` is read again from the
///   first retained event.
struct CodexWorkerStreamMachine {
    enum Action: Sendable, Equatable {
        /// Events for the consumer, in order.
        case emit([Event])
        /// Open the job's SSE stream: `?cursor=<after>`, or no cursor (every retained event).
        /// Feed its elements, decoded, to `receive`, and a failure to `streamFailed`.
        case connect(after: Int64?)
        /// Read the job's events as one JSON page (`?cursor=<after>`, or none) and feed it to
        /// `replayed`, a refusal to `pageRefused`.
        case readPage(after: Int64?)
        /// Say (on stderr, once) that a bound of the mapper's let go of state.
        case noteBoundReached(String)
        /// The job's stream is done.
        case finish
        /// End with the refusal (401/403) the worker answered.
        case refused(status: Int, code: String)
        /// End with the transport's failure as it came.
        case failed
    }

    let job: String
    /// The thread, when known (for the events this machine makes).
    let thread: String?
    /// Events carry their envelope as `raw`.
    let keepsRaw: Bool
    /// The last seq this stream has of the job; -1: none yet.
    private(set) var cursor: Int64 = -1
    private(set) var finished = false
    /// What the elements received since the last `endOfBatch` produced.
    private var gathered: [Event] = []

    init(job: String, thread: String?, keepsRaw: Bool) {
        self.job = job
        self.thread = thread
        self.keepsRaw = keepsRaw
    }

    /// The job's snapshot was read. `since`: resume after this seq (`--since job:seq`).
    mutating func start(state: String?, since: Int64?, live: Bool, mapper: CodexWorkerEventMapper) -> [Action] {
        let lastSeq = mapper.lastSeq(of: job)
        cursor = lastSeq ?? since ?? -1
        if mapper.hasFinished(job: job) { return finish() }
        let terminal = ["DONE", "FAILED", "CANCELLED"].contains(state ?? "")
        if !live || (terminal && since != nil && lastSeq == nil) {
            // A terminal job resumed from a cursor may already be past its job.finished, and the
            // worker never closes the stream: one JSON page is the whole story. From the start,
            // the stream's replay ends with job.finished, so it streams (in bounded memory).
            return [.readPage(after: cursor)]
        }
        return [.connect(after: cursor)]
    }

    // MARK: The live stream

    /// An element of the job's SSE stream, decoded away from the mapper's task.
    enum Decoded: Sendable {
        /// A change of the link, or a comment.
        case link(EventSource.Element)
        /// A delta or `item.started` envelope read straight from its bytes (without `--raw`).
        case hot(CodexWorkerHotEnvelope)
        case envelope(JSONValue)
    }

    /// One element of the job's stream, decoded, in order. `endpoint`: where the link goes (for
    /// `connection.state`). What it produced is gathered until `endOfBatch`; after
    /// `job.finished` the machine is done (`finished`) and takes nothing more.
    mutating func receive(_ element: Decoded, endpoint: String, mapper: inout CodexWorkerEventMapper) {
        guard !finished else { return }
        switch element {
        case .link(.connecting(let attempt)):
            if attempt > 1 { gathered.append(.connection(.reconnecting, attempt: attempt, endpoint: endpoint)) }
        case .link(.open):
            gathered.append(.connection(.connected, endpoint: endpoint))
        case .link(.disconnected(let reason, let retryIn, let attempt)):
            gathered.append(.connection(.reconnecting, attempt: attempt,
                                        reason: (reason?.detail ?? "the stream ended") + "; retrying in \(retryIn.secondsText)"))
        case .link:
            break  // `: connected`, `: ping` — the liveness watchdog already saw the bytes
        case .hot(let hot):
            if let seq = hot.seq, let gap = advance(to: seq) { gathered.append(gap) }
            mapper.map(hot, into: &gathered)
        case .envelope(let envelope):
            if let seq = envelope["seq"]?.int, let gap = advance(to: seq) { gathered.append(gap) }
            gathered += withRaw(mapper.map(envelope), envelope)
            finished = envelope["type"]?.string == "job.finished"
        }
    }

    /// What one network read brought has been received: its events go on as one batch, then
    /// a bound's note and, after `job.finished`, finish.
    mutating func endOfBatch(mapper: inout CodexWorkerEventMapper) -> [Action] {
        var actions = emit(gathered)
        gathered = []
        if let note = mapper.boundNote() { actions.append(.noteBoundReached(note)) }
        if finished { actions.append(.finish) }
        return actions
    }

    /// The stream's request failed with `status` (nil: no answer) and the worker's error `code`.
    mutating func streamFailed(status: Int?, code: String?, mapper: CodexWorkerEventMapper) -> [Action] {
        cursor = mapper.lastSeq(of: job) ?? cursor
        switch (status, code) {
        case (409?, "CURSOR_EXPIRED"?):
            return [.connect(after: nil)]
        case (404?, _):
            let gone = Event.error(TetherError(.eventsLost, "job \(job) is gone from the Codex Worker (404 \(code ?? "JOB_NOT_FOUND")): it was restarted and kept nothing after seq \(cursor)",
                                               hint: "thread history survives: tether history \(thread ?? "THREAD")"),
                                   session: thread, turn: job)
            return [.emit([gone])] + finish()
        case (let status?, _) where status == 401 || status == 403:
            return [.refused(status: status, code: code ?? "UNAUTHORIZED")]
        default:
            return [.failed]
        }
    }

    // MARK: One JSON page

    /// The page `readPage` asked for was refused with the worker's error `code`; nil: end with
    /// that refusal.
    func pageRefused(code: String, after: Int64?) -> Action? {
        code == "CURSOR_EXPIRED" && after != nil ? .readPage(after: nil) : nil
    }

    /// The page's envelopes (`data`), in order. The gap is worked out from the seqs the page
    /// holds, so it is exact even for a job that is still running.
    mutating func replayed(_ envelopes: [JSONValue], mapper: inout CodexWorkerEventMapper) -> [Action] {
        var actions: [Action] = []
        for envelope in envelopes {
            var events: [Event] = []
            if let seq = envelope["seq"]?.int, let gap = advance(to: seq) { events.append(gap) }
            events += withRaw(mapper.map(envelope), envelope)
            actions += emit(events)
        }
        if let note = mapper.boundNote() { actions.append(.noteBoundReached(note)) }
        return actions + finish()
    }

    // MARK: Rules

    /// A seq arrived: the cursor moves on to it; the error reporting the seqs between them as
    /// lost, if any were skipped.
    private mutating func advance(to seq: Int64) -> Event? {
        defer { cursor = max(cursor, seq) }
        return seq > cursor + 1 ? gap(after: cursor, before: seq) : nil
    }

    /// Events between `cursor` (the last seq we have) and `seq` (the one that arrived) were
    /// trimmed before we could read them: say exactly which.
    private func gap(after cursor: Int64, before seq: Int64) -> Event {
        let count = seq - cursor - 1
        let seqs = count == 1 ? "seq \(cursor + 1)" : "seq \(cursor + 1)…\(seq - 1)"
        return .error(TetherError(.eventsLost, "\(count) event\(count == 1 ? "" : "s") of job \(job) \(count == 1 ? "was" : "were") lost (\(seqs)): the Codex Worker no longer keeps them",
                                  hint: "the job's final state still arrives; tether history shows the thread's messages"),
                      session: thread, turn: job)
    }

    /// `events`, each carrying `envelope` as its wire message when `raw` is kept.
    private func withRaw(_ events: [Event], _ envelope: JSONValue) -> [Event] {
        guard keepsRaw else { return events }
        var events = events
        for index in events.indices where events[index].raw == nil { events[index].raw = envelope }
        return events
    }

    private func emit(_ events: [Event]) -> [Action] {
        events.isEmpty ? [] : [.emit(events)]
    }

    private mutating func finish() -> [Action] {
        finished = true
        return [.finish]
    }
}

extension CodexWorkerStreamMachine {
    /// The rule for a job stream that failed for a reason that may pass (the worker restarting,
    /// a timeout, a 5xx): it is tried again on the reconnect schedule, saying so with a
    /// `connection.state` reconnecting line; the mapper keeps the last seq, so a retry resumes
    /// after it and nothing comes twice. A failure after events arrived is a fresh one, not one
    /// more in a row. Lasting failures (401/403, not retryable) end the stream at once.
    struct Retry {
        enum Action: Sendable, Equatable {
            /// Say so, wait `delay`, try again.
            case retry(after: Duration, Event)
            /// End with the failure.
            case stop
        }

        private var policy: ReconnectPolicy
        private var seqBefore: Int64?

        init(configuration: ReconnectPolicy.Configuration) {
            policy = ReconnectPolicy(configuration: configuration)
        }

        var attempts: Int { policy.attempts }

        /// An attempt starts; the stream has `lastSeq` of the job.
        mutating func attempting(lastSeq: Int64?) {
            policy.connecting()
            seqBefore = lastSeq
        }

        /// The attempt failed with `error` (`doing`: what it was doing), at `now`, after which
        /// the stream has `lastSeq` of the job.
        mutating func failed(_ error: TetherError, doing what: String, lastSeq: Int64?, at now: ContinuousClock.Instant,
                             using generator: inout some RandomNumberGenerator) -> Action {
            guard error.retryable else { return .stop }
            if lastSeq != seqBefore { policy.madeProgress() }
            switch policy.failed(.transportError, at: now, using: &generator) {
            case .reconnect(let delay, let attempt):
                return .retry(after: delay, .connection(.reconnecting, attempt: attempt,
                                                        reason: "\(what): \(error.message); retrying in \(delay.secondsText)"))
            case .stop:
                return .stop
            }
        }
    }
}
