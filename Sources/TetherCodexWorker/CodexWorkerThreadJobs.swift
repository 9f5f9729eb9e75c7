import TetherCore
import TetherStreaming

/// Which jobs of a thread `events --session THREAD --follow` streams next: a pure state machine
/// fed with each look at the thread's history (`GET /v1/threads/{id}/events`), which names every
/// job of the thread in turn order. The I/O loop (`CodexWorkerEventStream`) executes its steps.
///
/// Each look yields every job this stream has not accounted for yet, oldest first, each once: a
/// job that started and ended between two looks, or one a newer job already followed, is still
/// streamed (its events replay from the worker while it keeps them). A job the worker no longer
/// has (its history id is `hist_<thread>_<turn>`: the worker restarted since) is a loss to
/// report, never a silent skip.
///
/// The first look is the baseline: jobs that are finished then are the thread's past (that is
/// `tether history`), an unfinished one is streamed from its start. A job is known by its job id
/// and, once known, by its turn id, because a worker restart renames every past job to
/// `hist_<thread>_<turn>`; and entries at positions inside the baseline stay the past even when
/// their ids change.
struct CodexWorkerThreadJobs: Sendable {
    /// One job of the thread, as the history names it.
    struct Entry: Sendable, Equatable {
        var job: String
        var turn: String?
        var finished: Bool

        /// The worker no longer has this job (a restart forgot it): no events to replay.
        var isForgotten: Bool { job.hasPrefix("hist_") }
    }

    enum Step: Sendable, Equatable {
        /// Stream this job's events to its `job.finished`.
        case stream(job: String)
        /// The job ran but its events are gone from the worker: report the loss.
        case lost(job: String, turn: String?)
    }

    private(set) var hasBaseline = false
    /// Entries in the baseline look: positions below this are the thread's past.
    private var baselineCount = 0
    /// Job ids and turn ids accounted for (streamed, reported lost, or past).
    private var accounted: Set<String> = []

    init() {}

    /// The thread's jobs in the order the history lists them (turn order), each once.
    static func entries(fromHistory envelopes: [JSONValue], thread: String) -> [Entry] {
        var order: [String] = []
        var byJob: [String: Entry] = [:]
        let forgottenPrefix = "hist_\(thread)_"
        for envelope in envelopes {
            guard let job = envelope["jobId"]?.string, !job.isEmpty else { continue }
            if byJob[job] == nil {
                order.append(job)
                var turn: String?
                if job.hasPrefix(forgottenPrefix), job.count > forgottenPrefix.count {
                    turn = String(job.dropFirst(forgottenPrefix.count))
                }
                byJob[job] = Entry(job: job, turn: turn, finished: false)
            }
            let payload = envelope["payload"]
            if byJob[job]?.turn == nil, let turn = payload?["turnId"]?.string ?? payload?["turn"]?["id"]?.string {
                byJob[job]?.turn = turn
            }
            if envelope["type"]?.string == "job.finished" { byJob[job]?.finished = true }
        }
        return order.compactMap { byJob[$0] }
    }

    /// The steps one look at the history calls for, oldest job first.
    mutating func look(_ entries: [Entry]) -> [Step] {
        guard hasBaseline else {
            hasBaseline = true
            baselineCount = entries.count
            var steps: [Step] = []
            for entry in entries {
                account(entry)
                if !entry.finished, !entry.isForgotten { steps.append(.stream(job: entry.job)) }
            }
            return steps
        }
        var steps: [Step] = []
        for (index, entry) in entries.enumerated() {
            if isAccounted(entry) { continue }
            account(entry)
            // A renamed past job (a restart) whose turn this stream never learned.
            if index < baselineCount, entry.isForgotten { continue }
            steps.append(entry.isForgotten ? .lost(job: entry.job, turn: entry.turn) : .stream(job: entry.job))
        }
        return steps
    }

    /// Records the turn a streamed job turned out to have (from its snapshot), so the job is
    /// still recognized after a restart renames it.
    mutating func noteTurn(_ turn: String, ofJob job: String) {
        accounted.insert(job)
        accounted.insert(Self.turnKey(turn))
    }

    private func isAccounted(_ entry: Entry) -> Bool {
        accounted.contains(entry.job) || entry.turn.map { accounted.contains(Self.turnKey($0)) } == true
    }

    private mutating func account(_ entry: Entry) {
        accounted.insert(entry.job)
        if let turn = entry.turn { accounted.insert(Self.turnKey(turn)) }
    }

    /// Turn ids and job ids share the set; a prefix keeps them apart.
    private static func turnKey(_ turn: String) -> String { "turn:" + turn }
}
