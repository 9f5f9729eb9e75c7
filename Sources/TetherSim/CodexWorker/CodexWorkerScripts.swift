import Foundation

extension CodexWorkerSimulator {
    /// The scripted turn a prompt gets, chosen by whole words of its text (case-insensitive), first
    /// match wins:
    ///
    /// | words in the prompt | script |
    /// |---|---|
    /// | `flood N` (N at most 5,000,000) | benchmarks, long parts: N `item.agentMessage.delta` events in agentMessage items of 1,000 deltas, each item started and completed |
    /// | `flood N new` | benchmarks, new parts: N agentMessage items, each `item.started` then one delta and never completed (2N events) |
    /// | `long N` (N an integer, at most 5,000,000) | a reply streamed as exactly N `item.agentMessage.delta` events |
    /// | `fail` (or a word starting with it) | `error` event, `turn.completed` failed, FAILED |
    /// | `edit`, `file`, `patch` | a fileChange item that needs approval (`file_change`) |
    /// | `run`, `approve`, `command` | a commandExecution item that needs approval (`command_execution`) |
    /// | `plan` | a plan item, then a plain reply |
    /// | anything else | a plain streamed reply |
    ///
    /// Every turn starts `job.state RUNNING`, `turn.started`, the userMessage item and a reasoning
    /// item. Reasoning deltas are never sent: the real worker drops them (notes §3).
    public enum Script: Sendable, Equatable, CustomStringConvertible {
        case reply
        case plan
        case long(Int)
        case flood(Int, FloodShape)
        case commandApproval
        case fileChangeApproval
        case fail

        public static func choose(for prompt: String) -> Script {
            let words = prompt.lowercased().split { !$0.isLetter && !$0.isNumber }.map(String.init)
            for (index, word) in words.enumerated() where word == "flood" && index + 1 < words.count {
                if let count = Int(words[index + 1]), count >= 0 {
                    return .flood(min(count, 5_000_000), words.contains("new") ? .newParts : .longParts)
                }
            }
            for (index, word) in words.enumerated() where word == "long" && index + 1 < words.count {
                if let count = Int(words[index + 1]), count >= 0 { return .long(min(count, 5_000_000)) }
            }
            if words.contains(where: { $0.hasPrefix("fail") }) { return .fail }
            if words.contains(where: { ["edit", "file", "patch"].contains($0) }) { return .fileChangeApproval }
            if words.contains(where: { ["run", "approve", "command"].contains($0) }) { return .commandApproval }
            if words.contains("plan") { return .plan }
            return .reply
        }

        public var description: String {
            switch self {
            case .reply: "reply"
            case .plan: "plan"
            case .long(let count): "long(\(count))"
            case .flood(let count, let shape): "flood(\(count), \(shape.rawValue))"
            case .commandApproval: "commandApproval"
            case .fileChangeApproval: "fileChangeApproval"
            case .fail: "fail"
            }
        }
    }

    /// Plays one job's script as codex notifications would drive the worker. Runs in its own task;
    /// stops at a cancel (`Interrupted` → `turn.completed interrupted`) or a restart (`Vanished`).
    struct ScriptRunner: Sendable {
        enum TurnEnd { case completed, interrupted, failed(JSON) }

        let store: Store
        let jobId: String
        let threadId: String
        let turnId: String
        let cwd: String
        let script: Script
        let input: JSON
        let prompt: String
        let pacer: Pacer
        let signals: AsyncStream<JobSignal>

        func run() async {
            defer { store.runnerFinished(jobId) }
            var signals = self.signals.makeAsyncIterator()
            do {
                try await pace()
                try store.setState(jobId, .running)
                try await step("turn.started", [
                    "threadId": .string(threadId),
                    "turn": [
                        "id": .string(turnId), "items": [], "status": "inProgress", "error": .null,
                        "startedAt": .int(Fixtures.unixSeconds(Date())),
                    ],
                ])
                let userItem: JSON = ["type": "userMessage", "id": .string(Fixtures.uuidV7()), "content": input]
                try await itemStarted(userItem)
                try await itemCompleted(userItem)
                let reasoning: JSON = ["type": "reasoning", "id": .string(Fixtures.itemId("rs")), "summary": [], "content": []]
                try await itemStarted(reasoning)
                try await itemCompleted(reasoning.setting("summary", [.string(Fixtures.reasoningSummary)]))

                let end: TurnEnd
                switch script {
                case .reply:
                    try await agentMessage(Fixtures.deltas(of: Fixtures.reply(to: prompt)))
                    end = .completed
                case .plan:
                    let plan: JSON = ["type": "plan", "id": .string(Fixtures.itemId("plan")), "text": ""]
                    try await itemStarted(plan)
                    try await itemCompleted(plan.setting("text", .string(Fixtures.planText)))
                    try await agentMessage(Fixtures.deltas(of: Fixtures.reply(to: prompt)))
                    end = .completed
                case .long(let count):
                    try await agentMessage(Fixtures.longDeltas(count))
                    end = .completed
                case .flood(let count, let shape):
                    try await flood(count, shape)
                    end = .completed
                case .commandApproval:
                    end = try await commandApproval(&signals)
                case .fileChangeApproval:
                    end = try await fileChangeApproval(&signals)
                case .fail:
                    end = try await failure()
                }
                try await pace()
                switch end {
                case .completed: try store.completeTurn(jobId, status: "completed")
                case .interrupted: try store.completeTurn(jobId, status: "interrupted")
                case .failed(let error): try store.completeTurn(jobId, status: "failed", error: error)
                }
            } catch is Store.Interrupted {
                try? store.completeTurn(jobId, status: "interrupted")
            } catch {
                // Vanished (restart) or cancelled (stop): nothing is left to tell.
            }
        }

        // MARK: Steps

        private func pace() async throws {
            try await pacer.pause()
        }

        private func step(_ type: String, _ payload: JSON) async throws {
            try await pace()
            try store.emit(jobId, type, payload)
        }

        private func itemStarted(_ item: JSON) async throws {
            try await step("item.started", [
                "threadId": .string(threadId), "turnId": .string(turnId), "item": item,
                "startedAtMs": .int(Fixtures.unixMillis(Date())),
            ])
        }

        private func itemCompleted(_ item: JSON) async throws {
            try await step("item.completed", [
                "threadId": .string(threadId), "turnId": .string(turnId), "item": item,
                "completedAtMs": .int(Fixtures.unixMillis(Date())),
            ])
        }

        private func delta(_ type: String, itemId: String, _ text: String) async throws {
            try await step(type, [
                "threadId": .string(threadId), "turnId": .string(turnId), "itemId": .string(itemId), "delta": .string(text),
            ])
        }

        private func agentMessage(_ deltas: [String]) async throws {
            let item: JSON = ["type": "agentMessage", "id": .string(Fixtures.itemId("msg")), "text": ""]
            let itemId = item["id"]?.stringValue ?? ""
            try await itemStarted(item)
            for text in deltas {
                try await delta("item.agentMessage.delta", itemId: itemId, text)
            }
            try await itemCompleted(item.setting("text", .string(deltas.joined())))
        }

        /// `flood N`: the deltas `token0 ` … in items as `shape` says; a long part is completed
        /// with its whole text, a new part never is.
        private func flood(_ count: Int, _ shape: FloodShape) async throws {
            // One random stem and a counter: random 32-bit ids would collide among 200,000 items.
            let stem = Fixtures.itemId("msg")
            var index = 0
            while index < count {
                let length = shape == .newParts ? 1 : min(FloodShape.longPartLength, count - index)
                let item: JSON = ["type": "agentMessage", "id": .string("\(stem)_\(shape.part(ofDelta: index))"), "text": ""]
                let itemId = item["id"]?.stringValue ?? ""
                try await itemStarted(item)
                var text = ""
                for _ in 0..<length {
                    let piece = "token\(index) "
                    try await delta("item.agentMessage.delta", itemId: itemId, piece)
                    if shape == .longParts { text += piece }
                    index += 1
                }
                if shape == .longParts { try await itemCompleted(item.setting("text", .string(text))) }
            }
        }

        private func awaitDecision(_ approvalId: String, _ signals: inout AsyncStream<JobSignal>.Iterator) async throws -> Decision {
            while let signal = await signals.next() {
                switch signal {
                case .interrupt: throw Store.Interrupted()
                case .decided(let id, let decision) where id == approvalId: return decision
                case .decided: continue
                }
            }
            throw CancellationError()
        }

        // MARK: Scripts

        private func commandApproval(_ signals: inout AsyncStream<JobSignal>.Iterator) async throws -> TurnEnd {
            let itemId = Fixtures.itemId("call")
            let item: JSON = [
                "type": "commandExecution", "id": .string(itemId), "command": .string(Fixtures.command),
                "cwd": .string(cwd), "processId": .null, "status": "inProgress",
                "commandActions": Fixtures.commandActions, "aggregatedOutput": .null, "exitCode": .null, "durationMs": .null,
            ]
            try await itemStarted(item)
            try await pace()
            let approvalId = try store.requestApproval(jobId, kind: .commandExecution, itemId: itemId, fields: [
                "reason": .string(Fixtures.commandReason), "command": .string(Fixtures.command), "cwd": .string(cwd),
                "commandActions": Fixtures.commandActions, "grantRoot": .null,
                "proposedExecpolicyAmendment": Fixtures.proposedAmendment,
            ])
            let decision = try await awaitDecision(approvalId, &signals)
            guard decision.runsTheAction else {
                try await itemCompleted(item.setting("status", "declined"))
                if decision.value == "cancel" { return .interrupted }
                try await agentMessage(Fixtures.deltas(of: Fixtures.commandDeclinedReply))
                return .completed
            }
            for chunk in Fixtures.commandOutput {
                try await delta("item.commandExecution.outputDelta", itemId: itemId, chunk)
            }
            try await itemCompleted(item
                .setting("status", "completed")
                .setting("aggregatedOutput", .string(Fixtures.commandOutput.joined()))
                .setting("exitCode", 0)
                .setting("durationMs", .int(Fixtures.commandDurationMs)))
            try await agentMessage(Fixtures.deltas(of: Fixtures.commandAcceptedReply))
            return .completed
        }

        private func fileChangeApproval(_ signals: inout AsyncStream<JobSignal>.Iterator) async throws -> TurnEnd {
            let itemId = Fixtures.itemId("call")
            let path = (cwd as NSString).appendingPathComponent(Fixtures.editedFile)
            let item: JSON = [
                "type": "fileChange", "id": .string(itemId),
                "changes": [["path": .string(path), "kind": ["type": "update", "move_path": .null], "diff": .string(Fixtures.fileDiff)]],
                "status": "inProgress",
            ]
            try await itemStarted(item)
            try await pace()
            let approvalId = try store.requestApproval(jobId, kind: .fileChange, itemId: itemId, fields: [
                "reason": .string(Fixtures.fileReason), "command": .null, "cwd": .null,
                "commandActions": [], "grantRoot": .null, "proposedExecpolicyAmendment": .null,
            ])
            let decision = try await awaitDecision(approvalId, &signals)
            guard decision.runsTheAction else {
                try await itemCompleted(item.setting("status", "declined"))
                if decision.value == "cancel" { return .interrupted }
                try await agentMessage(Fixtures.deltas(of: Fixtures.fileDeclinedReply))
                return .completed
            }
            try await delta("item.fileChange.outputDelta", itemId: itemId, Fixtures.fileOutput)
            try await itemCompleted(item.setting("status", "completed"))
            try await agentMessage(Fixtures.deltas(of: Fixtures.fileAcceptedReply))
            return .completed
        }

        private func failure() async throws -> TurnEnd {
            let error: JSON = [
                "message": .string(Fixtures.failureMessage),
                "codexErrorInfo": ["responseStreamDisconnected": ["httpStatusCode": 502]],
                "additionalDetails": .null,
            ]
            try await step("error", [
                "threadId": .string(threadId), "turnId": .string(turnId), "error": error, "willRetry": false,
            ])
            return .failed(error)
        }
    }
}
