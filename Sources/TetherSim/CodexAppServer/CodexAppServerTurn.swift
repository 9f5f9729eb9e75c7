import Foundation

/// One running turn: emits its script's notifications (paced), raises server→client requests and
/// waits for their first answer, takes steered input, and ends `completed`, `failed` or
/// `interrupted` (`turn/interrupt`, a `cancel` decision, or the simulator stopping).
final class CodexAppServerTurn: Sendable {
    typealias JSON = OrderedJSON
    typealias Shapes = CodexAppServerSimulator.Shapes
    typealias Wire = CodexAppServerWire

    struct Input: Sendable {
        var content: JSON
        var clientID: String?
        var text: String
    }

    private struct Control {
        var task: Task<Void, Never>?
        var steers: [Input] = []
        var interrupted = false
    }

    let sim: CodexAppServerSimulator
    let threadID: String
    let turnID: String
    let input: Input
    let scenario: CodexAppServerScenario
    /// Deltas a second apart (`slow` in the prompt).
    let slow: Bool
    private let control = Locked(Control())
    /// Set once the fileChange is applied: `turn/diff/updated` follows each token usage from then on.
    private let hasDiff = Locked(false)

    init(sim: CodexAppServerSimulator, threadID: String, turnID: String, input: Input) {
        self.sim = sim
        self.threadID = threadID
        self.turnID = turnID
        self.input = input
        let chosen = sim.options.scenario ?? CodexAppServerScenario.forPrompt(input.text)
        scenario = chosen
        slow = chosen == .slow || (sim.options.scenario == nil && input.text.lowercased().contains("slow"))
    }

    // MARK: - Control (from request handlers)

    func launch() {
        let task = Task { await self.run() }
        let interrupted = control.withLock { control -> Bool in
            control.task = task
            return control.interrupted
        }
        if interrupted { task.cancel() }
    }

    func interrupt() {
        let task = control.withLock { control -> Task<Void, Never>? in
            control.interrupted = true
            return control.task
        }
        task?.cancel()
    }

    /// `turn/start` on a busy thread, or `turn/steer`: the input joins this turn at the next
    /// model call; a reply being streamed is dropped (note §4). Called with the world's lock
    /// held, so that `end` sees it or the caller sees the turn gone.
    func steer(_ input: Input) {
        control.withLock { $0.steers.append(input) }
    }

    var task: Task<Void, Never>? { control.withLock { $0.task } }

    private func takeSteers() -> [Input] {
        control.withLock { control in
            defer { control.steers = [] }
            return control.steers
        }
    }

    private var hasSteers: Bool { control.withLock { !$0.steers.isEmpty } }

    // MARK: - The script

    private func run() async {
        do {
            try await opening()
            var reply: String
            switch scenario {
            case .plain, .slow:
                reply = "Fake model reply. You said: \(input.text)"
            case .fail:
                try await fail()
                return
            case .cmd:
                guard let next = try await command() else { return }
                reply = next
                usage()
            case .patch:
                guard let next = try await patch() else { return }
                reply = next
                usage()
            case .question:
                reply = try await question()
                usage()
            }
            // One model call a round; steered input makes another (note §4).
            while true {
                let steers = takeSteers()
                for steer in steers {
                    try await pause()
                    let item = Shapes.userMessage(id: CodexAppServerIDs.uuidV7(), clientID: steer.clientID, content: steer.content)
                    startItem(item)
                    completeItem(item, persisted: true)
                }
                if let last = steers.last { reply = "Fake model reply. You said: \(last.text)" }
                let spoken = try await say(reply)
                usage()
                guard let spoken else { continue }
                try await pause()
                if end(status: "completed", items: [spoken], itemsView: "summary") { break }
            }
        } catch {
            interrupted()
        }
    }

    /// `thread/status/changed` active, `turn/started`, the user's message.
    private func opening() async throws {
        try await pause()
        sim.state.withLock { state in
            state.broadcastStatus(of: threadID)
            state.emit(Wire.notification("turn/started", [
                "threadId": .string(threadID),
                "turn": Shapes.turn(id: turnID, items: [], itemsView: "notLoaded", status: "inProgress",
                                    startedAt: Wire.nowSeconds, completedAt: nil, durationMs: nil),
            ]), thread: threadID)
        }
        try await pause()
        let item = Shapes.userMessage(id: CodexAppServerIDs.uuidV7(), clientID: input.clientID, content: input.content)
        startItem(item)
        completeItem(item, persisted: true)
    }

    /// Streams `text` as 12-character deltas (the fake model's chunks) and completes it; nil
    /// when steered input arrived meanwhile (the partial message gets no `item/completed`).
    private func say(_ text: String) async throws -> JSON? {
        try await pause()
        let id = CodexAppServerIDs.messageID()
        startItem(Shapes.agentMessage(id: id, text: ""))
        for chunk in Self.chunks(of: text) {
            try await pause(slow ? sim.options.slowPacing : nil)
            if hasSteers { return nil }
            notify("item/agentMessage/delta", [
                "threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(id), "delta": .string(chunk),
            ])
        }
        try await pause()
        if hasSteers { return nil }
        let item = Shapes.agentMessage(id: id, text: text)
        completeItem(item, persisted: true)
        return item
    }

    static func chunks(of text: String) -> [String] {
        var chunks: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            chunks.append(String(rest.prefix(12)))
            rest = rest.dropFirst(12)
        }
        return chunks
    }

    private func fail() async throws {
        try await pause()
        let error: JSON = [
            "message": "Simulated model failure: the prompt asked to fail.", "codexErrorInfo": "other", "additionalDetails": .null,
        ]
        notify("error", ["error": error, "willRetry": false, "threadId": .string(threadID), "turnId": .string(turnID)])
        try await pause()
        end(status: "failed", error: error, items: [], itemsView: "notLoaded")
    }

    // MARK: - Emission helpers

    func pause(_ duration: Duration? = nil) async throws {
        let duration = duration ?? sim.options.pacing
        if duration > .zero {
            try await Task.sleep(for: duration)
        } else {
            await Task.yield()
            try Task.checkCancellation()
        }
    }

    func notify(_ method: String, _ params: JSON) {
        sim.state.withLock { $0.emit(Wire.notification(method, params), thread: threadID) }
    }

    func setFlags(_ flags: [String]) {
        sim.state.withLock { state in
            state.threads[threadID]?.activeFlags = flags
            state.broadcastStatus(of: threadID)
        }
    }

    private func updateTurn(_ state: inout CodexAppServerSimulator.State, _ body: (inout CodexAppServerSimulator.TurnRecord) -> Void) {
        guard let index = state.threads[threadID]?.turns.firstIndex(where: { $0.id == turnID }) else { return }
        body(&state.threads[threadID]!.turns[index])
    }

    func startItem(_ item: JSON, inSnapshot: Bool = false) {
        let now = Wire.nowMs
        sim.state.withLock { state in
            updateTurn(&state) { turn in
                turn.items.append(.init(item: item, startedAtMs: now, completedAtMs: nil, persisted: false, inSnapshotWhileRunning: inSnapshot))
            }
            state.emit(Wire.notification("item/started", [
                "item": item, "threadId": .string(threadID), "turnId": .string(turnID), "startedAtMs": .int(now),
            ]), thread: threadID)
        }
    }

    func completeItem(_ item: JSON, persisted: Bool) {
        let now = Wire.nowMs
        let id = item["id"]
        sim.state.withLock { state in
            updateTurn(&state) { turn in
                if let index = turn.items.lastIndex(where: { $0.item["id"] == id }) {
                    turn.items[index].item = item
                    turn.items[index].completedAtMs = now
                    turn.items[index].persisted = persisted
                    turn.items[index].inSnapshotWhileRunning = false
                } else {
                    turn.items.append(.init(item: item, startedAtMs: now, completedAtMs: now, persisted: persisted, inSnapshotWhileRunning: false))
                }
            }
            state.emit(Wire.notification("item/completed", [
                "item": item, "threadId": .string(threadID), "turnId": .string(turnID), "completedAtMs": .int(now),
            ]), thread: threadID)
        }
    }

    /// One model call's accounting: `thread/tokenUsage/updated` (10 in, 5 out, as the fake model
    /// reports), `account/rateLimits/updated`, and the turn's diff once there is one.
    func usage() {
        let diff = hasDiff.current
        sim.state.withLock { state in
            state.threads[threadID]?.totalInput += 10
            state.threads[threadID]?.totalOutput += 5
            guard let thread = state.threads[threadID] else { return }
            state.emit(Wire.notification("thread/tokenUsage/updated", Shapes.tokenUsage(
                threadID: threadID, turnID: turnID, totalInput: thread.totalInput, totalOutput: thread.totalOutput
            )), thread: threadID)
            state.emit(Wire.notification("account/rateLimits/updated", Shapes.rateLimits), thread: threadID)
            if diff { emitDiff(state) }
        }
    }

    func markDiff() {
        hasDiff.withLock { $0 = true }
        sim.state.withLock { emitDiff($0) }
    }

    private func emitDiff(_ state: CodexAppServerSimulator.State) {
        state.emit(Wire.notification("turn/diff/updated", [
            "threadId": .string(threadID), "turnId": .string(turnID), "diff": .string(Shapes.unifiedDiff),
        ]), thread: threadID)
    }

    /// Raises a server→client request (the next process-wide id) to the thread's subscribers and
    /// waits for its first answer. Throws when the turn is interrupted meanwhile.
    func ask(_ method: String, _ params: JSON) async throws -> JSON {
        let box = AnswerBox()
        sim.state.withLock { state in
            let id = state.nextRequestID
            state.nextRequestID += 1
            let message = Wire.request(id: id, method: method, params: params)
            state.pending[id] = .init(id: id, threadID: threadID, turnID: turnID, message: message, box: box)
            state.emit(message, thread: threadID)
        }
        guard let answer = await box.wait() else { throw CancellationError() }
        return answer
    }

    // MARK: - Ending

    /// The turn is over: `thread/readState/changed` (experimental clients), the thread idle,
    /// `turn/completed`. False, and nothing sent, when a completing turn has steered input
    /// waiting (`steer` runs under the same lock): it takes another model call instead.
    @discardableResult
    func end(status: String, error: JSON = .null, items: [JSON], itemsView: String, resolvePending: Bool = false) -> Bool {
        let now = Wire.nowMs
        let ended = sim.state.withLock { state -> Bool in
            guard state.threads[threadID]?.active === self else { return true }
            if status == "completed", hasSteers { return false }
            var startedAtMs = now
            updateTurn(&state) { turn in
                turn.status = status
                turn.error = error
                turn.completedAtMs = now
                startedAtMs = turn.startedAtMs
            }
            state.threads[threadID]?.active = nil
            state.threads[threadID]?.activeFlags = []
            // Experimental: the transcripts show it to `experimentalApi` clients (ws) on every
            // completed turn, and never to the others (stdio); `thread/list` has the state for all.
            if status == "completed", let first = state.threads[threadID]?.turns.first?.id {
                let revision = CodexAppServerIDs.revision()
                state.threads[threadID]?.readStateRevision = revision
                state.emit(Wire.notification("thread/readState/changed", [
                    "threadId": .string(threadID), "readState": Shapes.readState(firstUnreadTurn: first, revision: revision),
                ]), thread: threadID, experimental: true)
            }
            state.broadcastStatus(of: threadID)
            state.emit(Wire.notification("turn/completed", [
                "threadId": .string(threadID),
                "turn": Shapes.turn(id: turnID, items: items, itemsView: itemsView, status: status, error: error,
                                    startedAt: startedAtMs / 1000, completedAt: now / 1000, durationMs: now - startedAtMs),
            ]), thread: threadID)
            guard resolvePending else { return true }
            // An interrupt makes pending requests obsolete: `serverRequest/resolved` after `turn/completed` (note §4).
            for id in state.pending.values.filter({ $0.turnID == turnID }).map(\.id).sorted() {
                state.pending[id] = nil
                state.emit(Wire.notification("serverRequest/resolved", ["threadId": .string(threadID), "requestId": .int(id)]), thread: threadID)
            }
            return true
        }
        sim.checkDrained()
        return ended
    }

    /// Interrupted (`turn/interrupt`, or the simulator stopping): the model call is accounted,
    /// then the turn ends `interrupted` with no items.
    private func interrupted() {
        let current = sim.state.withLock { $0.threads[threadID]?.active === self }
        guard current else { return }
        usage()
        end(status: "interrupted", items: [], itemsView: "notLoaded", resolvePending: true)
    }
}
