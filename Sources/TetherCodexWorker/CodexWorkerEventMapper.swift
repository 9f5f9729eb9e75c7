import TetherCore
import TetherCodexProtocol
import TetherStreaming

/// Codex Worker envelopes `{type, ts, jobId, seq, payload}` → normalized events. A pure state
/// machine: the client feeds envelopes (live, replayed or from thread history) and gets events.
/// A turn is a job: `turn` is the job id and `cursor` is `job:seq`. Duplicates are dropped by
/// (job, seq, type) — seq alone is not unique in thread history, where it restarts per turn.
struct CodexWorkerEventMapper {
    /// The envelopes seen, by (job, seq, type): seq is per job, and thread history can repeat a
    /// seq with another type (adapters.md).
    private var seen = RecentSet(capacity: 8192, of: StreamSeqKey.self)
    /// The job of the last envelope with a seq, made into a dedup key's stream once per job.
    private var currentJob: StreamSeqKey.Stream?
    private var startedJobs = RecentSet(capacity: 1024)
    private var finishedJobs = RecentSet(capacity: 1024)
    private var outcomes = RecentMap<String, (TurnOutcome, String?)>(capacity: 1024)
    /// File-change items announced by item.started, by id: a file-change approval takes its
    /// changes from here. Only those: no other item is read again.
    private var fileChanges = RecentMap<String, JSONValue>(capacity: 1024)
    private var completedParts = RecentSet(capacity: 8192)
    private(set) var pendingApprovals: [String: Approval] = [:]
    /// The last seq seen per job (for resuming with `cursor=`). Per-job state is bounded like
    /// the rest (`jobLimit` jobs, the oldest let go of): a `watch` that runs for months sees
    /// job after job.
    private(set) var lastSeqs = RecentMap<StreamSeqKey.Stream, Int64>(capacity: Self.jobLimit)

    /// The last seq seen of `job`.
    func lastSeq(of job: String) -> Int64? { lastSeqs[StreamSeqKey.Stream(job)] }
    static let jobLimit = 4096
    /// The job of the last envelope admitted — started, so `startedJobs` holds it — and the
    /// thread recorded for it then: a stream is one job's envelopes, so it is looked up in the
    /// tables only when the job changes.
    private var lastAdmitted: (job: String, thread: String?)?

    init() {}

    /// An event's cursor: `job:seq`, made in one string of the size it needs.
    static func cursor(job: String, seq: Int64) -> String {
        var cursor = job
        cursor.reserveCapacity(job.utf8.count + 21)  // ":" and the longest Int64
        cursor += ":"
        cursor += String(seq)
        return cursor
    }

    static func parseCursor(_ cursor: String) -> (job: String, seq: Int64)? {
        guard let colon = cursor.lastIndex(of: ":"), let seq = Int64(cursor[cursor.index(after: colon)...]) else { return nil }
        let job = String(cursor[..<colon])
        return job.isEmpty ? nil : (job, seq)
    }

    func hasFinished(job: String) -> Bool { finishedJobs.contains(job) }

    /// An envelope read straight from its bytes (`CodexWorkerHotEnvelope.read`): the same events
    /// as the envelope parsed.
    mutating func map(_ hot: CodexWorkerHotEnvelope) -> [Event] {
        var events: [Event] = []
        map(hot, into: &events)
        return events
    }

    /// `map`, its events appended to `events` (the stream gathers a batch's events in one
    /// array: a busy stream's deltas then make no array of their own).
    mutating func map(_ hot: CodexWorkerHotEnvelope, into events: inout [Event]) {
        switch hot {
        case .delta(let read):
            guard let kind = CodexWorkerDelta.kind(ofType: read.type),
                  let admitted = admit(type: read.type, job: read.job, seq: read.seq, thread: read.thread, into: &events) else { return }
            appendDelta(kind: kind, job: read.job, thread: read.thread, item: read.item, delta: read.delta, cursor: admitted.cursor,
                        to: &events)
        case .itemStarted(let start):
            guard let admitted = admit(type: "item.started", job: start.job, seq: start.seq, thread: start.thread, into: &events)
            else { return }
            startItem(start.item, job: start.job, thread: start.thread, cursor: admitted.cursor, to: &events)
        }
    }

    /// An envelope `admit` let through, and its cursor (nil: it has no seq).
    private struct Admitted {
        var cursor: String?
    }

    /// What every envelope does first: drop a duplicate (nil), note the job's last seq and its
    /// thread, start the turn the first time the job is seen (appended to `events`).
    private mutating func admit(type: String, job: String, seq: Int64?, thread: String?, into events: inout [Event]) -> Admitted? {
        var cursor: String?
        if let seq {
            let stream: StreamSeqKey.Stream
            if let currentJob, currentJob.id == job {
                stream = currentJob
            } else {
                stream = StreamSeqKey.Stream(job)
                currentJob = stream
            }
            guard seen.insert(StreamSeqKey(stream: stream, seq: seq, kind: type)) else { return nil }
            if lastSeqs.update(stream, { Self.raise(&$0, to: seq) }) == nil { lastSeqs[stream] = seq }
            cursor = Self.cursor(job: job, seq: seq)
        }
        let known = lastAdmitted?.job == job
        if let thread, !known || lastAdmitted?.thread != thread { threads[job] = thread }
        if !known, !startedJobs.contains(job), !finishedJobs.contains(job) {
            startedJobs.insert(job)
            events.append(.turnStarted(session: thread ?? threadOf(job), turn: job, cursor: cursor, data: ["job": .string(job)]))
        }
        lastAdmitted = (job, thread ?? (known ? lastAdmitted?.thread : nil))
        return Admitted(cursor: cursor)
    }

    private mutating func startItem(_ item: JSONValue, job: String, thread: String?, cursor: String?, to events: inout [Event]) {
        guard let id = item["id"]?.string, let kind = CodexThreadItem.kind(of: item) else { return }
        if kind == .fileChange { fileChanges[id] = item }
        var content = CodexThreadItem.content(of: item)
        if kind == .text || kind == .reasoning { content["text"] = "" }
        events.append(.part(.partStarted, session: thread ?? threadOf(job), turn: job, part: id, kind: kind, content: content, cursor: cursor))
    }

    private func appendDelta(kind: PartKind, job: String, thread: String?, item: String?, delta: String?, cursor: String?,
                             to events: inout [Event]) {
        guard let item, let delta else { return }
        events.append(.partDelta(session: thread ?? threadOf(job), turn: job, part: item, kind: kind,
                                 field: kind == .text ? "text" : "output", delta: delta, cursor: cursor))
    }

    mutating func map(_ envelope: JSONValue) -> [Event] {
        guard let type = envelope["type"]?.string, let job = envelope["jobId"]?.string else { return [] }
        let payload = envelope["payload"] ?? .object([:])
        let thread = payload["threadId"]?.string
        var events: [Event] = []
        guard let admitted = admit(type: type, job: job, seq: envelope["seq"]?.int, thread: thread, into: &events) else { return [] }
        let cursor = admitted.cursor
        switch type {
        case "job.created":
            break
        case "job.state":
            if let status = Self.sessionStatus(payload["state"]?.string), lastStatus[job] != status {
                lastStatus[job] = status
                var event = Event.sessionStatus(thread ?? threadOf(job) ?? "", status, message: payload["errorMessage"]?.string)
                if event.session == "" { event.session = nil }
                event.turn = job
                event.cursor = cursor
                events.append(event)
            }
        case "turn.started":
            break
        case "turn.completed":
            let turn = payload["turn"]
            if let outcome = CodexThreadItem.outcome(ofTurnStatus: turn?["status"]?.string) {
                outcomes[job] = (outcome, turn?["error"]?["message"]?.string)
            }
        case "item.started":
            guard let item = payload["item"] else { break }
            startItem(item, job: job, thread: thread, cursor: cursor, to: &events)
        case "item.completed":
            guard let item = payload["item"], let id = item["id"]?.string, let kind = CodexThreadItem.kind(of: item) else { break }
            if kind == .fileChange { fileChanges[id] = nil }
            guard completedParts.insert(id) else { break }
            events.append(.part(.partCompleted, session: thread ?? threadOf(job), turn: job, part: id, kind: kind,
                                content: CodexThreadItem.content(of: item), cursor: cursor))
        case "item.agentMessage.delta", "item.commandExecution.outputDelta", "item.fileChange.outputDelta":
            guard let kind = CodexWorkerDelta.kind(ofType: type) else { break }
            appendDelta(kind: kind, job: job, thread: thread, item: payload["itemId"]?.string, delta: payload["delta"]?.string,
                        cursor: cursor, to: &events)
        case "approval.required":
            guard let approval = approval(from: payload, job: job) else { break }
            pendingApprovals[approval.id] = approval
            events.append(.approvalRequested(approval, cursor: cursor))
        case "approval.resolved":
            guard let approvalID = payload["approvalId"]?.string else { break }
            let id = CompositeID.join([job, approvalID])
            pendingApprovals[id] = nil
            // A resolution after job.finished is stale (the job is over): not worth an event.
            guard !finishedJobs.contains(job) else { break }
            events.append(.approvalResolved(id: id, session: thread ?? threadOf(job), turn: job,
                                            decision: Self.decision(fromWorker: payload["decision"]?.string), cursor: cursor))
        case "error":
            let message = payload["error"]?["message"]?.string ?? payload["message"]?.string ?? "unknown error"
            let willRetry = payload["willRetry"]?.bool ?? false
            events.append(.error(TetherError(.failed, "Codex: \(message)", retryable: willRetry),
                                 session: thread ?? threadOf(job), turn: job))
            events[events.count - 1].cursor = cursor
        case "job.finished":
            finishedJobs.insert(job)
            for id in pendingApprovals.keys where id.hasPrefix(CompositeID.join([job]) + String(CompositeID.separator)) {
                pendingApprovals[id] = nil
            }
            let state = payload["state"]?.string
            let outcome: TurnOutcome = switch state {
            case "DONE": .completed
            case "CANCELLED": .cancelled
            case "FAILED": .failed
            default: outcomes[job]?.0 ?? .completed
            }
            let error = outcome == .failed ? (payload["errorMessage"]?.string ?? outcomes[job]?.1 ?? "the turn failed") : nil
            events.append(.turnCompleted(session: thread ?? threadOf(job), turn: job, outcome: outcome, error: error, cursor: cursor))
            outcomes[job] = nil
            lastStatus[job] = nil
        default:
            break  // thread.started and anything newer: not part of the domain
        }
        return events
    }

    private var threads = RecentMap<String, String>(capacity: Self.jobLimit)
    /// QUEUED and RUNNING are both busy: announce a status only when it changes.
    private var lastStatus = RecentMap<String, SessionStatus>(capacity: Self.jobLimit)

    /// State let go of because a bound was reached.
    var releasedState: Int { outcomes.evicted + fileChanges.evicted + lastSeqs.evicted + threads.evicted + lastStatus.evicted }
    private var boundSaid = false

    /// What to say on stderr, once per run, the first time a bound let go of state; nil otherwise.
    mutating func boundNote() -> String? {
        guard !boundSaid, releasedState > 0 else { return nil }
        boundSaid = true
        return "more jobs or file changes are open at once than Tether keeps (\(Self.jobLimit) jobs, 1,024 file changes): "
            + "the oldest are let go of; a job let go of before its job.finished ends as completed unless the worker says "
            + "otherwise, and a file-change approval let go of shows no changes"
    }
    private func threadOf(_ job: String) -> String? { threads[job] }

    /// Remember which thread a job belongs to (from its snapshot), for events that omit it.
    mutating func noteThread(_ thread: String, job: String) {
        threads[job] = thread
        lastAdmitted = nil
    }

    private static func raise(_ value: inout Int64, to seq: Int64) { value = max(value, seq) }

    static func sessionStatus(_ state: String?) -> SessionStatus? {
        switch state {
        case "QUEUED", "RUNNING": return .busy
        case "WAITING_APPROVAL": return .waitingApproval
        case "DONE", "CANCELLED": return .idle
        case "FAILED": return .error
        default: return nil
        }
    }

    static func decision(fromWorker decision: String?) -> String {
        switch decision {
        case "accept_with_execpolicy_amendment": return Decision.acceptWithAmendment.rawValue
        case let value?: return value
        default: return "unknown"
        }
    }

    private func approval(from payload: JSONValue, job: String) -> Approval? {
        guard let approvalID = payload["approvalId"]?.string else { return nil }
        let isCommand = payload["kind"]?.string != "file_change"
        let command = payload["command"]?.string
        var changes: [JSONValue] = []
        if !isCommand, let itemID = payload["itemId"]?.string, let item = fileChanges[itemID] {
            changes = (item["changes"]?.array ?? []).map(CodexThreadItem.change)
        }
        var extra: JSONObject = [:]
        if let amendment = payload["proposedExecpolicyAmendment"]?.array, !amendment.isEmpty {
            extra["proposed_amendment"] = .array(amendment)
        }
        if let item = payload["itemId"]?.string { extra["item"] = .string(item) }
        if let grantRoot = payload["grantRoot"], !grantRoot.isNull { extra["grant_root"] = grantRoot }
        return Approval(id: CompositeID.join([job, approvalID]), session: payload["threadId"]?.string, turn: job,
                        kind: isCommand ? .command : .fileChange,
                        title: isCommand ? "Run \(command ?? "a command")" : "Apply file changes",
                        command: command, cwd: payload["cwd"]?.string, reason: payload["reason"]?.string, changes: changes,
                        options: isCommand ? Decision.allCases : [.accept, .acceptForSession, .decline, .cancel],
                        risk: isCommand ? CodexThreadItem.risk(command: command) : .medium, extra: extra)
    }
}
