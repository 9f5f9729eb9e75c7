extension CodexMonitorSimulator {
    /// What the daemon and its one shared `codex app-server` know: workspaces and whether they
    /// are connected, threads with their turns and items, running turns, and the server→client
    /// approval requests still waiting for `respond_to_server_request`.
    final class World: Sendable {
        struct ThreadRecord: Sendable {
            var id: String
            var preview: String
            var name: String?
            var cwd: String
            var workspaceID: String
            var createdAt: Int
            var updatedAt: Int
            /// Loaded into the app-server (started or resumed). `turn/start` on an unloaded thread
            /// fails until `thread/resume` (notes §8).
            var loaded: Bool
            var archived = false
            var turns: [TurnRecord] = []
            /// Commands accepted with `acceptForSession`, and prefixes from execpolicy amendments:
            /// later matching commands in this thread run without asking, as codex does.
            var sessionApprovedCommands: Set<String> = []
            var allowedPrefixes: [[String]] = []
        }

        struct TurnRecord: Sendable {
            var id: String
            var status: String
            var error: JSON = .null
            var items: [JSON] = []
            var startedAt: Int
            var completedAt: Int?
        }

        struct PendingApproval: Sendable {
            var id: JSON
            /// The app-server process that asked (`appServerGeneration`): ids repeat across them.
            var generation: Int
            var workspaceID: String
            var threadID: String
            var turnID: String
            /// The whole request message, re-sent verbatim when the thread is resumed.
            var message: JSON
            var waiter: CheckedContinuation<JSON?, Never>?
            /// The client's `result`, once relayed (possibly before the turn started waiting).
            var answer: JSON?
            var abandoned = false
            /// Fired by the turn once it has emitted the first event that follows the decision.
            let handled = CodexMonitorSignal()
            /// Reordered mode: fired once the `respond_to_server_request` response is queued; the
            /// turn holds until then, so that response trails `serverRequest/resolved` only.
            let replyQueued = CodexMonitorSignal()
        }

        struct ActiveTurn: Sendable {
            var turnID: String
            var workspaceID: String
            var task: Task<Void, Never>?
            var interruptRequested = false
            let finished = CodexMonitorSignal()
        }

        enum ConnectOutcome: Sendable {
            case notFound
            case alreadyConnected
            /// First session: `codex app-server` was spawned (emits `codex/connected`).
            case spawned
            /// Joined the shared session of another workspace (no `codex/connected`).
            case joined
        }

        enum TurnStartFailure: Error, Sendable {
            case threadNotFound
            case turnInProgress
        }

        private struct State: Sendable {
            var workspaces: [Workspace]
            var appServerRunning: Bool
            var threads: [String: ThreadRecord] = [:]
            var threadOrder: [String] = []
            var pending: [PendingApproval] = []
            var active: [String: ActiveTurn] = [:]
            var clock = 1_767_000_200
            var nextInnerID = 1
            var nextServerRequestID = 0
            /// Bumped when app-server restarts: turns of an older process fall silent.
            var appServerGeneration = 0
            var nextThread = 1
            var nextTurn = 1
            var nextItem = 1
        }

        private let state: Locked<State>

        init(options: Options) {
            var initial = State(
                workspaces: options.workspaces,
                appServerRunning: options.workspaces.contains { $0.connected }
            )
            if options.seedHistory, let first = options.workspaces.first {
                World.seed(into: &initial, workspace: first)
            }
            state = Locked(initial)
        }

        private static func seed(into state: inout State, workspace: Workspace) {
            var fixed = ThreadRecord(
                id: "thr_0", preview: "fix tests", cwd: workspace.path, workspaceID: workspace.id,
                createdAt: 1_767_000_000, updatedAt: 1_767_000_100, loaded: false
            )
            fixed.turns = [
                TurnRecord(
                    id: "turn_0", status: "completed",
                    items: [
                        AppServer.userMessageItem(id: "it_u0", text: "fix tests"),
                        AppServer.agentMessageItem(id: "it_a0", text: "Done."),
                    ],
                    startedAt: 1_767_000_000, completedAt: 1_767_000_100
                ),
            ]
            let elsewhere = ThreadRecord(
                id: "thr_elsewhere", preview: "unrelated project", cwd: "/srv/elsewhere", workspaceID: workspace.id,
                createdAt: 1_766_990_000, updatedAt: 1_766_990_050, loaded: false
            )
            state.threads = [fixed.id: fixed, elsewhere.id: elsewhere]
            state.threadOrder = [fixed.id, elsewhere.id]
        }

        // MARK: - Ids and clock

        /// The daemon's own JSON-RPC id towards app-server: the `id` of a raw-wrapped result.
        func nextInnerID() -> Int {
            state.withLock { state in
                defer { state.nextInnerID += 1 }
                return state.nextInnerID
            }
        }

        func nextItemID(_ prefix: String) -> String {
            state.withLock { state in
                defer { state.nextItem += 1 }
                return "it_\(prefix)\(state.nextItem)"
            }
        }

        /// Unix seconds, advancing one per call so transcripts are reproducible.
        func tick() -> Int {
            state.withLock { state in
                state.clock += 1
                return state.clock
            }
        }

        // MARK: - Workspaces

        var workspaces: [Workspace] {
            state.withLock { $0.workspaces }
        }

        func workspace(_ id: String) -> Workspace? {
            state.withLock { $0.workspaces.first { $0.id == id } }
        }

        /// A workspace with an app-server session: what every codex method needs.
        func session(_ id: String) -> Workspace? {
            workspace(id).flatMap { $0.connected ? $0 : nil }
        }

        var connectedWorkspaces: [Workspace] {
            state.withLock { $0.workspaces.filter(\.connected) }
        }

        func connect(_ id: String) -> ConnectOutcome {
            state.withLock { state in
                guard let index = state.workspaces.firstIndex(where: { $0.id == id }) else { return .notFound }
                if state.workspaces[index].connected { return .alreadyConnected }
                state.workspaces[index].connected = true
                if state.appServerRunning { return .joined }
                state.appServerRunning = true
                return .spawned
            }
        }

        // MARK: - Threads

        func createThread(in workspace: Workspace) -> ThreadRecord {
            state.withLock { state in
                state.clock += 1
                let id = "thr_\(state.nextThread)"
                state.nextThread += 1
                let record = ThreadRecord(
                    id: id, preview: "", cwd: workspace.path, workspaceID: workspace.id,
                    createdAt: state.clock, updatedAt: state.clock, loaded: true
                )
                state.threads[id] = record
                state.threadOrder.append(id)
                return record
            }
        }

        func thread(_ id: String) -> ThreadRecord? {
            state.withLock { $0.threads[id] }
        }

        /// `thread/list` order: newest first by the given key (codex `created_at` | `updated_at`).
        func listThreads(sortKey: String?) -> [ThreadRecord] {
            state.withLock { state in
                let all = state.threadOrder.compactMap { state.threads[$0] }.filter { !$0.archived }
                if sortKey == "updated_at" {
                    return all.sorted { ($0.updatedAt, $0.id) > ($1.updatedAt, $1.id) }
                }
                return all.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
            }
        }

        /// `thread/resume`: loads the thread; the caller's workspace becomes its route for events.
        func loadThread(_ id: String, workspaceID: String) -> ThreadRecord? {
            state.withLock { state in
                guard state.threads[id] != nil else { return nil }
                state.threads[id]?.loaded = true
                state.threads[id]?.workspaceID = workspaceID
                return state.threads[id]
            }
        }

        func update(_ id: String, _ body: (inout ThreadRecord) -> Void) -> ThreadRecord? {
            state.withLock { state in
                guard var record = state.threads[id] else { return nil }
                body(&record)
                state.threads[id] = record
                return record
            }
        }

        /// `{type: notLoaded | idle | active}`, with `activeFlags` on current codex.
        func status(of id: String) -> JSON {
            state.withLock { state in
                guard let record = state.threads[id], record.loaded else { return ["type": "notLoaded"] }
                guard state.active[id] != nil else { return ["type": "idle"] }
                let waiting = state.pending.contains { $0.threadID == id && !$0.abandoned && $0.answer == nil }
                return ["type": "active", "activeFlags": waiting ? ["waitingOnApproval"] : []]
            }
        }

        // MARK: - Turns

        func beginTurn(threadID: String, workspaceID: String, prompt: String) -> Result<String, TurnStartFailure> {
            state.withLock { state in
                guard var record = state.threads[threadID], record.loaded, !record.archived else {
                    return .failure(.threadNotFound)
                }
                guard state.active[threadID] == nil else { return .failure(.turnInProgress) }
                state.clock += 1
                let turnID = "turn_\(state.nextTurn)"
                state.nextTurn += 1
                if record.preview.isEmpty { record.preview = prompt }
                record.updatedAt = state.clock
                record.turns.append(TurnRecord(id: turnID, status: "inProgress", startedAt: state.clock))
                state.threads[threadID] = record
                state.active[threadID] = ActiveTurn(turnID: turnID, workspaceID: workspaceID)
                return .success(turnID)
            }
        }

        /// Attaches the running script; cancels it at once if an interrupt raced ahead of it.
        func attach(_ task: Task<Void, Never>, threadID: String, turnID: String) {
            let cancelNow = state.withLock { state -> Bool in
                guard state.active[threadID]?.turnID == turnID else { return false }
                state.active[threadID]?.task = task
                return state.active[threadID]?.interruptRequested ?? false
            }
            if cancelNow { task.cancel() }
        }

        func finishedSignal(threadID: String, turnID: String) -> CodexMonitorSignal? {
            state.withLock { state in
                state.active[threadID].flatMap { $0.turnID == turnID ? $0.finished : nil }
            }
        }

        /// `turn/interrupt`: nil when that turn is not running.
        func interrupt(threadID: String, turnID: String) -> CodexMonitorSignal? {
            let found = state.withLock { state -> (Task<Void, Never>?, CodexMonitorSignal)? in
                guard let active = state.active[threadID], active.turnID == turnID else { return nil }
                state.active[threadID]?.interruptRequested = true
                return (active.task, active.finished)
            }
            guard let (task, finished) = found else { return nil }
            task?.cancel()
            return finished
        }

        /// Upserts an item into the turn's history (`item/started`, then the authoritative `item/completed`).
        func record(item: JSON, threadID: String, turnID: String) {
            state.withLock { state in
                guard let turnIndex = state.threads[threadID]?.turns.firstIndex(where: { $0.id == turnID }) else { return }
                var items = state.threads[threadID]!.turns[turnIndex].items
                if let existing = items.firstIndex(where: { $0["id"] == item["id"] }) {
                    items[existing] = item
                } else {
                    items.append(item)
                }
                state.threads[threadID]!.turns[turnIndex].items = items
            }
        }

        /// Ends the turn in the history and frees the thread; returns the final turn record.
        func finishTurn(threadID: String, turnID: String, status: String, error: JSON) -> TurnRecord? {
            state.withLock { state in
                if state.active[threadID]?.turnID == turnID { state.active[threadID] = nil }
                state.pending.removeAll { $0.threadID == threadID && $0.turnID == turnID }
                guard let turnIndex = state.threads[threadID]?.turns.firstIndex(where: { $0.id == turnID }) else { return nil }
                state.clock += 1
                state.threads[threadID]!.turns[turnIndex].status = status
                state.threads[threadID]!.turns[turnIndex].error = error
                state.threads[threadID]!.turns[turnIndex].completedAt = state.clock
                state.threads[threadID]!.updatedAt = state.clock
                return state.threads[threadID]!.turns[turnIndex]
            }
        }

        /// Every running script, for `stop()`.
        func runningTasks() -> [Task<Void, Never>] {
            state.withLock { $0.active.values.compactMap(\.task) }
        }

        // MARK: - Session approvals

        func isPreapproved(threadID: String, argv: [String]) -> Bool {
            state.withLock { state in
                guard let record = state.threads[threadID] else { return false }
                if record.sessionApprovedCommands.contains(argv.joined(separator: " ")) { return true }
                return record.allowedPrefixes.contains { !$0.isEmpty && argv.starts(with: $0) }
            }
        }

        func approveForSession(threadID: String, argv: [String]) {
            state.withLock { _ = $0.threads[threadID]?.sessionApprovedCommands.insert(argv.joined(separator: " ")) }
        }

        func allowPrefix(threadID: String, prefix: [String]) {
            state.withLock { $0.threads[threadID]?.allowedPrefixes.append(prefix) }
        }

        // MARK: - App-server restarts

        var appServerGeneration: Int { state.withLock { $0.appServerGeneration } }

        /// Codex's app-server dies and the daemon will spawn a new one on the next
        /// `connect_workspace`: every workspace is disconnected, every thread unloaded, running
        /// turns and their requests are gone without a word (the history then shows those turns
        /// `interrupted`, as codex-cli 0.163.0's `thread/resume` does), and request ids start
        /// from 0 again. Returns the scripts to cancel.
        func restartAppServer() -> [Task<Void, Never>] {
            let (tasks, waiters) = state.withLock { state -> ([Task<Void, Never>], [CheckedContinuation<JSON?, Never>]) in
                state.appServerGeneration += 1
                state.appServerRunning = false
                for index in state.workspaces.indices { state.workspaces[index].connected = false }
                for id in state.threads.keys { state.threads[id]?.loaded = false }
                for (threadID, active) in state.active {
                    guard let index = state.threads[threadID]?.turns.firstIndex(where: { $0.id == active.turnID }) else { continue }
                    state.threads[threadID]!.turns[index].status = "interrupted"
                }
                let tasks = state.active.values.compactMap(\.task)
                let waiters = state.pending.compactMap(\.waiter)
                state.active = [:]
                state.pending = []
                state.nextServerRequestID = 0
                return (tasks, waiters)
            }
            for waiter in waiters { waiter.resume(returning: nil) }
            return tasks
        }

        // MARK: - Server→client requests

        /// Numbers a request of process `generation` and registers it before it is broadcast, so
        /// an answer can never outrun it; nil when that process has been replaced meanwhile.
        func registerApproval(generation: Int, _ make: (JSON) -> PendingApproval) -> PendingApproval? {
            state.withLock { state in
                guard state.appServerGeneration == generation else { return nil }
                let approval = make(.int(state.nextServerRequestID))
                state.nextServerRequestID += 1
                state.pending.append(approval)
                return approval
            }
        }

        /// Waits for the client's `result` for request `id`; nil when the turn is cancelled first.
        func awaitDecision(for id: JSON, generation: Int) async -> JSON? {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<JSON?, Never>) in
                    let immediate = state.withLock { state -> JSON?? in
                        guard let index = state.pending.firstIndex(where: { $0.id == id && $0.generation == generation }) else { return .some(nil) }
                        if let answer = state.pending[index].answer { return .some(answer) }
                        if state.pending[index].abandoned { return .some(nil) }
                        state.pending[index].waiter = continuation
                        return .none
                    }
                    if let immediate { continuation.resume(returning: immediate) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<JSON?, Never>? in
                    guard let index = state.pending.firstIndex(where: { $0.id == id && $0.generation == generation }) else { return nil }
                    state.pending[index].abandoned = true
                    defer { state.pending[index].waiter = nil }
                    return state.pending[index].waiter
                }
                waiter?.resume(returning: nil)
            }
        }

        /// What app-server does with `{"id":requestId,"result":…}` on stdin: hands it to the
        /// request with exactly that id (JSON type included: `"0"` is not `0`), or ignores it.
        func deliver(requestID: JSON, result: JSON) -> PendingApproval? {
            let found = state.withLock { state -> (CheckedContinuation<JSON?, Never>?, PendingApproval)? in
                guard let index = state.pending.firstIndex(where: { $0.id == requestID && $0.answer == nil }),
                      !state.pending[index].abandoned
                else { return nil }
                let waiter = state.pending[index].waiter
                state.pending[index].answer = result
                state.pending[index].waiter = nil
                return (waiter, state.pending[index])
            }
            guard let (waiter, approval) = found else { return nil }
            waiter?.resume(returning: result)
            return approval
        }

        func removeApproval(_ id: JSON, generation: Int) {
            state.withLock { state in state.pending.removeAll { $0.id == id && $0.generation == generation } }
        }

        /// Requests of this thread still waiting for an answer, oldest first.
        func pendingApprovals(threadID: String) -> [PendingApproval] {
            state.withLock { state in state.pending.filter { $0.threadID == threadID && !$0.abandoned && $0.answer == nil } }
        }
    }
}
