extension CodexMonitorSimulator {
    /// One running turn: emits its script's app-server messages (paced), waits on approvals, and
    /// ends the turn however it stops — completed, failed, or interrupted by `turn_interrupt`,
    /// a `cancel` decision, or `stop()`.
    struct TurnScript: Sendable {
        // Spelled out for the script bodies, which extend this type from another file.
        typealias AppServer = CodexMonitorSimulator.AppServer
        typealias JSON = OrderedJSON

        let simulator: CodexMonitorSimulator
        let workspace: Workspace
        let threadID: String
        let turnID: String
        let prompt: String
        let scenario: CodexMonitorScenario
        /// `"never"` under `accessMode: full-access`: nothing asks for approval.
        let approvalPolicy: String
        /// Fired once `turn/started` and the user's message have gone out.
        let firstEvents = CodexMonitorSignal()
        /// Reordered mode: the turn pauses after its opening until the response is queued, so the
        /// response lands after the first events rather than after the whole turn.
        let responseQueued: CodexMonitorSignal?

        private struct Progress: Sendable {
            var openApproval: JSON?
            /// Signals a request handler may be waiting on; all fired when the turn ends.
            var signals: [CodexMonitorSignal] = []
            var ended = false
        }

        private let progress = Locked(Progress())
        /// The app-server process this turn runs in: once it is replaced, the turn says nothing more.
        private let generation: Int

        init(simulator: CodexMonitorSimulator, workspace: Workspace, threadID: String, turnID: String,
             prompt: String, scenario: CodexMonitorScenario, approvalPolicy: String,
             responseQueued: CodexMonitorSignal? = nil) {
            self.simulator = simulator
            self.workspace = workspace
            self.threadID = threadID
            self.turnID = turnID
            self.prompt = prompt
            self.scenario = scenario
            self.approvalPolicy = approvalPolicy
            self.responseQueued = responseQueued
            generation = simulator.world.appServerGeneration
        }

        /// Whether the app-server this turn runs in is still the current one.
        private var processAlive: Bool { world.appServerGeneration == generation }

        var world: World { simulator.world }
        var isCurrent: Bool { simulator.options.codex == .current }

        func launch() {
            let task = Task { await run() }
            world.attach(task, threadID: threadID, turnID: turnID)
        }

        private func run() async {
            let finished = world.finishedSignal(threadID: threadID, turnID: turnID)
            do {
                try await opening()
                try await perform(scenario)
            } catch {
                interrupted()
            }
            firstEvents.fire()
            for signal in progress.withLock({ $0.signals }) { signal.fire() }
            finished?.fire()
        }

        /// `turn/started`, then the user's message as an item.
        private func opening() async throws {
            try await emit(AppServer.turnStarted(threadID: threadID, turn: AppServer.startedTurn(id: turnID)))
            if isCurrent {
                try await emit(AppServer.threadStatusChanged(threadID: threadID, status: world.status(of: threadID)))
            }
            let user = AppServer.userMessageItem(id: world.nextItemID("u"), text: prompt)
            try await start(user)
            try await complete(user)
            firstEvents.fire()
            if let responseQueued {
                await responseQueued.wait()
                try Task.checkCancellation()
            }
        }

        // MARK: - Emission

        /// Paces, then relays; throws once the turn is cancelled.
        func emit(_ message: JSON, tag: Broadcast.EventTag = .plain) async throws {
            try Task.checkCancellation()
            let pacing = simulator.options.pacing
            if pacing > .zero { try await Task.sleep(for: pacing) }
            emitNow(message, tag: tag)
        }

        /// Relays at once, even from a cancelled turn (its closing events).
        func emitNow(_ message: JSON, tag: Broadcast.EventTag = .plain) {
            guard processAlive else { return }
            simulator.emit(message, workspaceID: workspace.id, tag: tag)
        }

        /// A daemon notification that is not an `app-server-event` (`terminal-output`, …).
        func notify(_ method: String, _ params: JSON) async throws {
            try Task.checkCancellation()
            let pacing = simulator.options.pacing
            if pacing > .zero { try await Task.sleep(for: pacing) }
            simulator.broadcast.notify(method, params)
        }

        func start(_ item: JSON) async throws {
            world.record(item: item, threadID: threadID, turnID: turnID)
            var message = AppServer.itemStarted(item, threadID: threadID, turnID: turnID)
            if isCurrent { message["params"]?["startedAtMs"] = .int(AppServer.nowMs) }
            try await emit(message)
        }

        func complete(_ item: JSON) async throws {
            world.record(item: item, threadID: threadID, turnID: turnID)
            try await emit(completion(item))
        }

        private func completion(_ item: JSON) -> JSON {
            var message = AppServer.itemCompleted(item, threadID: threadID, turnID: turnID)
            if isCurrent { message["params"]?["completedAtMs"] = .int(AppServer.nowMs) }
            return message
        }

        func delta(_ method: String, itemID: String, _ text: String, extra: [JSON.Member] = []) async throws {
            try await emit(
                AppServer.delta(method, threadID: threadID, turnID: turnID, itemID: itemID, delta: text, extra: extra),
                tag: .delta(itemID: itemID)
            )
        }

        /// An agent message streamed in small chunks, then completed whole.
        func say(_ text: String) async throws {
            try await say(text, chunks: Self.chunks(of: text))
        }

        func say(_ text: String, chunks: [String]) async throws {
            let id = world.nextItemID("a")
            try await start(AppServer.agentMessageItem(id: id, text: ""))
            for chunk in chunks {
                try await delta("item/agentMessage/delta", itemID: id, chunk)
            }
            try await complete(AppServer.agentMessageItem(id: id, text: text))
        }

        /// Two words a chunk, spaces kept: `"I'll run "`, `"the tests."`.
        static func chunks(of text: String) -> [String] {
            var chunks: [String] = []
            var current = ""
            var words = 0
            for character in text {
                current.append(character)
                if character == " " {
                    words += 1
                    if words == 2 {
                        chunks.append(current)
                        current = ""
                        words = 0
                    }
                }
            }
            if !current.isEmpty { chunks.append(current) }
            return chunks
        }

        func usage(input: Int = 1000, output: Int = 200, reasoning: Int = 0) async throws {
            try await emit(AppServer.tokenUsage(threadID: threadID, turnID: turnID, input: input, output: output, reasoning: reasoning))
        }

        // MARK: - Approvals

        /// Sends a server→client request and waits for the relayed `result`. On current codex the
        /// answer is acknowledged with `serverRequest/resolved`.
        func requestApproval(method: String, params: JSON) async throws -> JSON {
            guard let approval = world.registerApproval(generation: generation, { id in
                World.PendingApproval(id: id, generation: generation, workspaceID: workspace.id, threadID: threadID, turnID: turnID,
                                      message: AppServer.request(id: id, method: method, params: params))
            }) else { throw CancellationError() }  // its app-server is gone
            let id = approval.id
            progress.withLock {
                $0.openApproval = id
                $0.signals.append(approval.handled)
            }
            try await emit(approval.message)
            guard let result = await world.awaitDecision(for: id, generation: generation) else { throw CancellationError() }
            world.removeApproval(id, generation: generation)
            progress.withLock { $0.openApproval = nil }
            if isCurrent {
                emitNow(AppServer.serverRequestResolved(threadID: threadID, requestID: id))
            }
            approval.handled.fire()
            if simulator.options.reorderResponses {
                await approval.replyQueued.wait()
                try Task.checkCancellation()
            }
            return result
        }

        // MARK: - Ending

        func finish(status: String, error: JSON = .null) async throws {
            try Task.checkCancellation()
            let pacing = simulator.options.pacing
            if pacing > .zero { try await Task.sleep(for: pacing) }
            end(status: status, error: error)
        }

        private func end(status: String, error: JSON) {
            let alreadyEnded = progress.withLock { progress -> Bool in
                defer { progress.ended = true }
                return progress.ended
            }
            guard !alreadyEnded, processAlive,
                  let record = world.finishTurn(threadID: threadID, turnID: turnID, status: status, error: error)
            else { return }
            // Current codex repeats the turn's items here; older builds left `items` empty (§4.1, §8).
            emitNow(AppServer.turnCompleted(threadID: threadID, turn: AppServer.turn(record, items: isCurrent ? nil : [])))
            if isCurrent {
                emitNow(AppServer.threadStatusChanged(threadID: threadID, status: world.status(of: threadID)))
            }
        }

        /// The turn was interrupted: a still-open approval is cleared, then `turn/completed` `interrupted`.
        private func interrupted() {
            guard processAlive else { return }  // died with its app-server: no goodbye
            if let open = progress.withLock({ progress -> JSON? in
                defer { progress.openApproval = nil }
                return progress.openApproval
            }) {
                world.removeApproval(open, generation: generation)
                if isCurrent { emitNow(AppServer.serverRequestResolved(threadID: threadID, requestID: open)) }
            }
            end(status: "interrupted", error: .null)
        }
    }
}
