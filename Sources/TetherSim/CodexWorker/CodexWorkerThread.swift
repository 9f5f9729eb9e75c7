import Foundation

extension CodexWorkerSimulator {
    /// What codex itself remembers of a thread (its rollout). It survives a worker restart,
    /// unlike jobs: thread history is rebuilt from it (notes §0, §5).
    final class ThreadRecord {
        struct Turn {
            let id: String
            /// The job this worker process ran the turn with (forgotten on restart: see history).
            var jobId: String?
            let startedAt: Date
            var completedAt: Date?
            /// codex turn status: `inProgress`, `completed`, `failed`, `interrupted`.
            var status = "inProgress"
            var errorMessage: String?
            /// Completed userMessage / agentMessage items, cut down as `thread/read` projects them.
            var messages: [(ts: Date, item: JSON)] = []
        }

        let id: String
        let cwd: String
        let name: String?
        let createdAt: Date
        var updatedAt: Date
        var preview = ""
        var archived = false
        /// Loaded into the app-server (`thread/start` or `thread/resume`); a restart unloads it.
        var loaded = true
        var turns: [Turn] = []

        init(id: String, cwd: String, name: String?, now: Date) {
            self.id = id
            self.cwd = cwd
            self.name = name
            self.createdAt = now
            self.updatedAt = now
        }

        /// `#toThreadDto`.
        func dto(pendingApprovalCount: Int) -> JSON {
            [
                "threadId": .string(id), "preview": .string(preview), "cwd": .string(cwd),
                "createdAt": .int(Fixtures.unixSeconds(createdAt)), "updatedAt": .int(Fixtures.unixSeconds(updatedAt)),
                "modelProvider": "openai", "pendingApprovalCount": .int(pendingApprovalCount),
            ]
        }

        func turnIndex(_ turnId: String) -> Int? { turns.firstIndex { $0.id == turnId } }

        /// Records what codex would persist from a job event (`item.completed` of messages, `turn.completed`).
        func record(_ type: String, _ payload: JSON, turnId: String, now: Date) {
            guard let index = turnIndex(turnId) else { return }
            switch type {
            case "item.completed":
                guard let item = payload["item"], let kind = item["type"]?.stringValue else { return }
                if kind == "userMessage" {
                    turns[index].messages.append((now, ["type": "userMessage", "id": item["id"] ?? .null, "content": item["content"] ?? []]))
                } else if kind == "agentMessage" {
                    turns[index].messages.append((now, ["type": "agentMessage", "id": item["id"] ?? .null, "text": item["text"] ?? ""]))
                }
            case "turn.completed":
                let turn = payload["turn"]
                turns[index].status = turn?["status"]?.stringValue ?? "completed"
                turns[index].errorMessage = turn?["error"]?["message"]?.stringValue
                turns[index].completedAt = now
                updatedAt = now
            default:
                break
            }
        }

        /// The flattened list `GET /v1/threads/{tid}/events` pages through (notes §5):
        /// per turn, synthesized `item.completed` for user/agent messages, `error` for a failed turn and
        /// `job.state` + `job.finished` for a terminal one, with `seq` restarting at 0. The turn of a job
        /// that is still active is represented by that job's own retained events, with their real seq.
        func history(jobs: [String: Job]) -> [JSON] {
            var out: [JSON] = []
            for turn in turns {
                if let jobId = turn.jobId, let job = jobs[jobId], !job.isTerminal {
                    out.append(contentsOf: job.events.map(\.json))
                    continue
                }
                let jobId = turn.jobId.flatMap { jobs[$0] != nil ? $0 : nil } ?? "hist_\(id)_\(turn.id)"
                var seq = 0
                func add(_ type: String, _ ts: Date, _ payload: JSON) {
                    out.append(Envelope.json(type: type, ts: Fixtures.iso(ts), jobId: jobId, seq: seq, payload: payload))
                    seq += 1
                }
                for message in turn.messages {
                    add("item.completed", message.ts, [
                        "threadId": .string(id), "turnId": .string(turn.id),
                        "itemId": message.item["id"] ?? .null, "item": message.item,
                    ])
                }
                guard turn.status != "inProgress" else { continue }
                let end = turn.completedAt ?? turn.startedAt
                let state = JobState(turnStatus: turn.status)
                if state == .failed {
                    add("error", end, [
                        "message": .optional(turn.errorMessage), "threadId": .string(id), "turnId": .string(turn.id),
                    ])
                }
                let payload: JSON = ["state": .string(state.rawValue), "errorMessage": .optional(turn.errorMessage)]
                add("job.state", end, payload)
                add("job.finished", end, payload)
            }
            return out
        }
    }
}
