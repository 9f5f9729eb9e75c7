import Foundation
import Logging

extension CodexWorkerSimulator {
    /// All of the simulated worker's state (threads as codex keeps them, jobs as the worker keeps them
    /// in memory, the request log) behind one lock. A lock rather than an actor because an SSE replay
    /// and its live subscription must be taken in one step, as the Node worker does in one tick (§2.3).
    final class Store: @unchecked Sendable {
        struct Interrupted: Error {}
        struct Vanished: Error {}

        let options: Options
        let logger: Logger
        /// The bearer token now in force (starts as `options.token`).
        let token: Locked<String?>
        private let lock = NSRecursiveLock()
        private var threads: [String: ThreadRecord] = [:]
        private var jobs: [String: Job] = [:]
        private var runners: [String: Task<Void, Never>] = [:]
        private var requests: [RecordedRequest] = []
        private var nextSubscriberId = 0
        /// `Options.historyShrinksOnce` has fired.
        private var historyShrank = false

        init(options: Options, logger: Logger) {
            self.options = options
            self.logger = logger
            token = Locked(options.token)
        }

        private func locked<T>(_ body: () throws -> T) rethrows -> T {
            lock.lock()
            defer { lock.unlock() }
            return try body()
        }

        // MARK: Request log

        func record(_ request: RecordedRequest) { locked { requests.append(request) } }
        var requestLog: [RecordedRequest] { locked { requests } }
        func clearRequestLog() { locked { requests.removeAll() } }

        // MARK: Projects

        var projectPaths: [String] { options.projects.isEmpty ? ["/home/dev/demo"] : options.projects }

        func projectsBody() -> JSON {
            let data = projectPaths.enumerated().map { index, path -> JSON in
                ["projectId": .string("proj_\(index + 1)"), "projectPath": .string(path), "displayName": .string(Fixtures.displayName(ofProject: path))]
            }
            return ["data": .array(data)]
        }

        // MARK: Threads

        private func pendingApprovals(ofThread threadId: String) -> Int {
            jobs.values.filter { $0.threadId == threadId && !$0.isTerminal }.reduce(0) { $0 + $1.pendingApprovalCount }
        }

        private func dto(_ thread: ThreadRecord) -> JSON {
            thread.dto(pendingApprovalCount: pendingApprovals(ofThread: thread.id))
        }

        /// `POST /v1/threads` (§1.4): an unrecognised approvalPolicy/sandbox is silently defaulted, so
        /// only the project selector can fail.
        func createThread(_ body: JSON) throws -> JSON {
            let projectId = body["projectId"].flatMap { $0 == .null ? nil : $0 }
            let projectPath = body["projectPath"].flatMap { $0 == .null ? nil : $0 }
            let cwd: String
            switch (projectId, projectPath) {
            case (.some, .some):
                throw HTTPError(400, "INVALID_PROJECT_SELECTOR", "projectId 与 projectPath 只能二选一 (give projectId or projectPath, not both)")
            case (.some(let id), nil):
                let paths = projectPaths
                guard let idString = id.stringValue, idString.hasPrefix("proj_"),
                      let index = Int(idString.dropFirst(5)), index >= 1, index <= paths.count
                else {
                    throw HTTPError(400, "PROJECT_NOT_FOUND", "项目不存在: \(id.stringValue ?? id.serialized) (unknown projectId)")
                }
                cwd = paths[index - 1]
            case (nil, .some(let path)):
                cwd = path.stringValue ?? projectPaths[0]
            case (nil, nil):
                cwd = projectPaths[0]
            }
            let now = Date()
            let thread = ThreadRecord(id: Fixtures.uuidV7(now: now), cwd: cwd, name: body["threadName"]?.stringValue, now: now)
            return locked {
                threads[thread.id] = thread
                return ["thread": dto(thread)]
            }
        }

        /// `GET /v1/threads`: one codex `thread/list` (limit 100, newest first). Like real codex, a thread
        /// appears only once it has had a turn (§8).
        func listThreads(archived rawArchived: String?) throws -> JSON {
            let archived: Bool
            switch rawArchived {
            case nil, "false", "0": archived = false
            case "true", "1": archived = true
            default: throw HTTPError(400, "INVALID_ARCHIVED", "archived 必须是 true/false/1/0 (archived must be true, false, 1 or 0)")
            }
            return locked {
                let list = threads.values
                    .filter { !$0.turns.isEmpty && $0.archived == archived }
                    .sorted { ($0.updatedAt, $0.createdAt) > ($1.updatedAt, $1.createdAt) }
                    .prefix(100)
                return ["data": .array(list.map(dto)), "nextCursor": .null]
            }
        }

        private func resumeFailure(_ threadId: String) -> HTTPError {
            HTTPError(500, "INTERNAL_ERROR", #"RPC thread/resume failed: {"code":-32600,"message":"no rollout found for thread id \#(threadId)"}"#)
        }

        func activate(_ threadId: String) throws -> JSON {
            try locked {
                guard let thread = threads[threadId] else { throw resumeFailure(threadId) }
                thread.loaded = true
                return ["thread": dto(thread)]
            }
        }

        func setArchived(_ threadId: String, _ archived: Bool) throws -> JSON {
            try locked {
                guard let thread = threads[threadId] else {
                    throw archived
                        ? HTTPError(502, "THREAD_ARCHIVE_FAILED", "归档线程失败 (thread/archive and thread/update failed for \(threadId))")
                        : HTTPError(502, "THREAD_UNARCHIVE_FAILED", "取消归档失败 (thread/unarchive and thread/update failed for \(threadId))")
                }
                thread.archived = archived
                return ["threadId": .string(threadId), "status": archived ? "archived" : "active"]
            }
        }

        /// `GET /v1/threads/{tid}/events` (§5): index paging over the flattened history.
        func threadHistory(_ threadId: String, cursor rawCursor: String?, limit rawLimit: String?) throws -> JSON {
            var cursor = -1
            if let rawCursor, !rawCursor.isEmpty {
                guard let parsed = Int(rawCursor), parsed >= -1 else {
                    throw HTTPError(400, "INVALID_CURSOR", "cursor 必须是 >= -1 的整数 (cursor must be an integer >= -1)")
                }
                cursor = parsed
            }
            var limit = 200
            if let rawLimit, !rawLimit.isEmpty {
                guard let parsed = Int(rawLimit), parsed > 0 else {
                    throw HTTPError(400, "INVALID_LIMIT", "limit 必须是正整数 (limit must be a positive integer)")
                }
                limit = min(parsed, 1000)
            }
            let (all, shrinks): ([JSON], Bool) = locked {
                let shrinks = options.historyShrinksOnce && cursor > -1 && !historyShrank
                if shrinks { historyShrank = true }
                return (threads[threadId]?.history(jobs: jobs) ?? [], shrinks)
            }
            guard !shrinks, cursor < all.count || (all.isEmpty && cursor == -1) else {
                throw HTTPError(409, "THREAD_CURSOR_EXPIRED", "线程事件游标已失效 (cursor \(cursor) is beyond the \(all.count) history events)")
            }
            let start = cursor + 1
            let end = min(all.count, start + limit)
            let page = start < end ? Array(all[start..<end]) : []
            let nextCursor = page.isEmpty ? cursor : end - 1
            return ["data": .array(page), "nextCursor": .int(nextCursor), "hasMore": .bool(nextCursor < all.count - 1)]
        }

        // MARK: Turns and jobs

        /// `POST /v1/threads/{tid}/turns`: creates the job (`job.created`, `job.state QUEUED`), then lets
        /// its script run; replies with the snapshot (202).
        func startTurn(_ threadId: String, _ body: JSON) throws -> JSON {
            let input: JSON
            if let array = body["input"]?.arrayValue, !array.isEmpty {
                input = .array(array)
            } else if let text = body["text"]?.stringValue, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                input = [["type": "text", "text": .string(text)]]
            } else {
                throw HTTPError(400, "INVALID_INPUT", "text 或 input 不能为空 (give a non-empty text or input)")
            }
            let prompt = (input.arrayValue ?? [])
                .compactMap { $0["type"]?.stringValue == "text" ? $0["text"]?.stringValue : nil }
                .joined(separator: "\n")
            let script = Script.choose(for: prompt)

            return try locked {
                if let active = jobs.values.first(where: { $0.threadId == threadId && !$0.isTerminal }) {
                    throw HTTPError(409, "THREAD_HAS_ACTIVE_JOB", "线程已有进行中的任务 \(active.id) (the thread already has an active job)")
                }
                guard let thread = threads[threadId] else { throw resumeFailure(threadId) }
                thread.loaded = true
                let now = Date()
                let job = Job(id: Fixtures.workerId("job_"), threadId: threadId, turnId: Fixtures.uuidV7(now: now),
                              retention: options.retention, now: now)
                job.closesFinishedStreams = options.closeFinishedStreams
                jobs[job.id] = job
                job.append("job.created", ["threadId": .string(threadId)], now: now)
                // A job is born QUEUED; the worker still announces it (`{state}` only, no errorMessage).
                job.append("job.state", ["state": "QUEUED"], now: now)
                thread.turns.append(ThreadRecord.Turn(id: job.turnId, jobId: job.id, startedAt: now))
                if thread.preview.isEmpty { thread.preview = prompt }
                thread.updatedAt = now

                let runner = ScriptRunner(
                    store: self, jobId: job.id, threadId: threadId, turnId: job.turnId, cwd: thread.cwd,
                    script: script, input: input, prompt: prompt, pacer: Pacer(interval: options.pacing), signals: job.signals
                )
                logger.debug("codex-worker sim: job \(job.id) runs script \(script) on thread \(threadId)")
                runners[job.id] = Task { await runner.run() }
                return job.snapshot
            }
        }

        private func job(_ jobId: String) throws -> Job {
            guard let job = jobs[jobId] else {
                throw HTTPError(404, "JOB_NOT_FOUND", "任务不存在: \(jobId) (job not found)")
            }
            return job
        }

        /// Whether the job has ended (or is gone: a restart forgot it).
        func isTerminal(_ jobId: String) -> Bool {
            locked { jobs[jobId]?.isTerminal ?? true }
        }

        func snapshot(_ jobId: String) throws -> JSON {
            try locked { try job(jobId).snapshot }
        }

        /// JSON form of `GET /v1/jobs/{jid}/events`: `{data, nextCursor, firstSeq}`.
        func listEvents(_ jobId: String, cursor: String?) throws -> JSON {
            try locked {
                let job = try job(jobId)
                let page = try job.events(after: cursor)
                return ["data": .array(page.data.map(\.json)), "nextCursor": .int(page.nextCursor), "firstSeq": .int(job.firstSeq)]
            }
        }

        /// SSE form: the replay and the live subscription are taken under one lock, so nothing is
        /// lost or repeated between them. Errors are thrown before any stream exists (§2.1).
        func openStream(_ jobId: String, cursor: String?) throws -> (outputs: AsyncStream<StreamOutput>, dropAfter: Int?) {
            try locked {
                let job = try job(jobId)
                let replay = try job.events(after: cursor).data
                let (stream, continuation) = AsyncStream.makeStream(of: StreamOutput.self)
                continuation.yield(.comment(Array(": connected\n\n".utf8)))
                if !replay.isEmpty { continuation.yield(.events(replay.map(\.sseFrame))) }
                if options.closeFinishedStreams, replay.contains(where: { $0.type == "job.finished" }) {
                    continuation.yield(.end)
                    continuation.finish()
                    return (stream, nil)
                }
                let subscriberId = nextSubscriberId
                nextSubscriberId += 1
                job.subscribers[subscriberId] = continuation
                job.streamsOpened += 1

                let interval = options.pingInterval
                let ping = Task {
                    while true {
                        do { try await Task.sleep(for: interval) } catch { return }
                        if case .terminated = continuation.yield(.comment(Array(": ping\n\n".utf8))) { return }
                    }
                }
                continuation.onTermination = { [weak self] _ in
                    ping.cancel()
                    self?.removeSubscriber(subscriberId, from: jobId)
                }
                let dropAfter = options.dropStreamAfter.flatMap { count in
                    options.dropStreamRepeats || job.streamsOpened == 1 ? count : nil
                }
                return (stream, dropAfter)
            }
        }

        private func removeSubscriber(_ id: Int, from jobId: String) {
            locked { _ = jobs[jobId]?.subscribers.removeValue(forKey: id) }
        }

        /// `POST /v1/jobs/{jid}/approve` (§4).
        func approve(_ jobId: String, _ body: JSON) throws -> JSON {
            try locked {
                let job = try job(jobId)
                guard let approvalId = (body["approvalId"] ?? body["approval_id"])?.stringValue, !approvalId.isEmpty else {
                    throw HTTPError(400, "INVALID_APPROVAL_ID", "approvalId 不能为空 (approvalId is required)")
                }
                guard let value = body["decision"]?.stringValue, Decision.all.contains(value) else {
                    throw HTTPError(400, "INVALID_DECISION", "decision 必须是 \(Decision.all.joined(separator: "|")) 之一")
                }
                guard var approval = job.approvals[approvalId] else {
                    throw HTTPError(404, "APPROVAL_NOT_FOUND", "审批不存在: \(approvalId) (approval not found for this job)")
                }
                if let first = approval.decision {
                    return ["approvalId": .string(approvalId), "status": "already_submitted", "decision": .string(first.value)]
                }
                var amendment: [String]?
                if value == "accept_with_execpolicy_amendment" {
                    guard approval.kind == .commandExecution else {
                        throw HTTPError(400, "INVALID_DECISION_FOR_KIND", "该审批类型不支持此决策 (accept_with_execpolicy_amendment is for command approvals only)")
                    }
                    let raw = (body["execPolicyAmendment"] ?? body["exec_policy_amendment"])?.arrayValue ?? []
                    let argv = raw.compactMap(\.stringValue)
                    guard !raw.isEmpty, argv.count == raw.count, !argv.contains(where: \.isEmpty) else {
                        throw HTTPError(400, "INVALID_EXEC_POLICY_AMENDMENT", "execPolicyAmendment 必须是非空字符串数组 (a non-empty array of non-empty strings)")
                    }
                    amendment = argv
                }
                let decision = Decision(value: value, amendment: amendment)
                approval.decision = decision
                job.approvals[approvalId] = approval
                job.pendingApprovalCount = max(0, job.pendingApprovalCount - 1)

                let now = Date()
                var resolved: JSON = ["approvalId": .string(approvalId), "decision": .string(value), "decidedAt": .string(Fixtures.iso(now))]
                if let reason = (body["declineReason"] ?? body["decline_reason"])?.stringValue {
                    resolved = resolved.setting("declineReason", .string(reason))
                }
                job.append("approval.resolved", resolved, now: now)
                if !job.isTerminal, job.pendingApprovalCount == 0, job.state == .waitingApproval {
                    job.setState(.running, now: now)
                }
                job.signalSink.yield(.decided(approvalId: approvalId, decision))
                return ["approvalId": .string(approvalId), "status": "submitted", "decision": .string(value)]
            }
        }

        /// `POST /v1/jobs/{jid}/cancel` (§1.4): a terminal job is returned unchanged; otherwise the turn is
        /// interrupted and the snapshot returned as it is now; CANCELLED follows as events.
        func cancel(_ jobId: String) throws -> JSON {
            try locked {
                let job = try job(jobId)
                let snapshot = job.snapshot
                if !job.isTerminal, !job.interruptRequested {
                    job.interruptRequested = true
                    job.signalSink.yield(.interrupt)
                }
                return snapshot
            }
        }

        // MARK: Script side (what codex's notifications do to a job)

        /// Runs `body` on a live job; throws `Interrupted` once a cancel was requested (unless
        /// `interruptible` is false) and `Vanished` after a restart.
        func scripted<T>(_ jobId: String, interruptible: Bool = true, _ body: (Job, ThreadRecord?) throws -> T) throws -> T {
            try locked {
                guard let job = jobs[jobId] else { throw Vanished() }
                if interruptible, job.interruptRequested { throw Interrupted() }
                return try body(job, threads[job.threadId])
            }
        }

        /// Appends a codex-derived event and lets the thread (codex's rollout) record it.
        func emit(_ jobId: String, _ type: String, _ payload: JSON) throws {
            try scripted(jobId) { job, thread in
                let now = Date()
                if type == "error" {
                    job.errorMessage = payload["error"]?["message"]?.stringValue ?? payload["message"]?.stringValue
                }
                job.append(type, payload, now: now)
                thread?.record(type, payload, turnId: job.turnId, now: now)
            }
        }

        func setState(_ jobId: String, _ state: JobState) throws {
            try scripted(jobId) { job, _ in job.setState(state) }
        }

        /// `item/*/requestApproval` from codex: WAITING_APPROVAL, then `approval.required`.
        func requestApproval(_ jobId: String, kind: Approval.Kind, itemId: String, fields: JSON) throws -> String {
            try scripted(jobId) { job, _ in
                let now = Date()
                let approvalId = Fixtures.workerId("appr_")
                job.approvals[approvalId] = Approval(id: approvalId, kind: kind, itemId: itemId)
                job.pendingApprovalCount += 1
                job.setState(.waitingApproval, now: now)
                let requestMethod = kind == .commandExecution
                    ? "item/commandExecution/requestApproval" : "item/fileChange/requestApproval"
                var payload: JSON = [
                    "approvalId": .string(approvalId), "jobId": .string(job.id), "threadId": .string(job.threadId),
                    "turnId": .string(job.turnId), "itemId": .string(itemId), "kind": .string(kind.rawValue),
                    "requestMethod": .string(requestMethod), "createdAt": .string(Fixtures.iso(now)),
                ]
                if case .object(let extra) = fields {
                    for (key, value) in extra { payload = payload.setting(key, value) }
                }
                job.append("approval.required", payload, now: now)
                return approvalId
            }
        }

        /// `turn/completed` from codex: `turn.completed`, then the terminal `job.state` and `job.finished`.
        func completeTurn(_ jobId: String, status: String, error: JSON = .null) throws {
            try scripted(jobId, interruptible: status == "interrupted" ? false : true) { job, thread in
                let now = Date()
                let startedAt = thread?.turns.first { $0.id == job.turnId }?.startedAt ?? job.createdAt
                let turn: JSON = [
                    "id": .string(job.turnId), "items": [], "status": .string(status), "error": error,
                    "startedAt": .int(Fixtures.unixSeconds(startedAt)), "completedAt": .int(Fixtures.unixSeconds(now)),
                    "durationMs": .int(max(0, Fixtures.unixMillis(now) - Fixtures.unixMillis(startedAt))),
                ]
                let payload: JSON = ["threadId": .string(job.threadId), "turn": turn]
                if let message = error["message"]?.stringValue, job.errorMessage == nil { job.errorMessage = message }
                job.append("turn.completed", payload, now: now)
                thread?.record("turn.completed", payload, turnId: job.turnId, now: now)
                job.finish(JobState(turnStatus: status), now: now)
            }
        }

        func runnerFinished(_ jobId: String) {
            locked { _ = runners.removeValue(forKey: jobId) }
        }

        // MARK: Lifecycle

        /// Cuts every open SSE connection (no terminating chunk, as when the process dies).
        private func abortStreams() {
            for job in jobs.values {
                for subscriber in job.subscribers.values { subscriber.yield(.abort) }
            }
        }

        /// A worker restart: every job and its events are gone (404 JOB_NOT_FOUND), threads survive
        /// in codex but are unloaded, and a turn that was running is left interrupted.
        func restart() {
            let tasks: [Task<Void, Never>] = locked {
                abortStreams()
                for job in jobs.values { job.signalSink.finish() }
                jobs.removeAll()
                let now = Date()
                for thread in threads.values {
                    thread.loaded = false
                    for index in thread.turns.indices where thread.turns[index].status == "inProgress" {
                        thread.turns[index].status = "interrupted"
                        thread.turns[index].completedAt = now
                    }
                }
                defer { runners.removeAll() }
                return Array(runners.values)
            }
            tasks.forEach { $0.cancel() }
        }

        /// Server stop: cut the streams and stop the scripts; state stays readable.
        func shutdown() {
            let tasks: [Task<Void, Never>] = locked {
                abortStreams()
                defer { runners.removeAll() }
                return Array(runners.values)
            }
            tasks.forEach { $0.cancel() }
        }
    }
}
