import Foundation

extension CodexMonitorSimulator {
    /// Builders for the Codex app-server v2 messages the daemon relays inside `app-server-event`
    /// (notes §4), and for the daemon's own synthetic `codex/*` events (§3). Keys are camelCase;
    /// there is no `jsonrpc` member.
    enum AppServer {
        // MARK: - Daemon shapes

        /// `WorkspaceInfo` as serialized by upstream `types.rs`: every `Option` present as `null`.
        static func workspaceInfo(_ workspace: Workspace) -> JSON {
            [
                "id": .string(workspace.id), "name": .string(workspace.name), "path": .string(workspace.path),
                "connected": .bool(workspace.connected), "kind": "main", "parentId": .null, "worktree": .null,
                "settings": [
                    "sidebarCollapsed": false, "sortOrder": .null, "groupId": .null, "cloneSourceWorkspaceId": .null,
                    "gitRoot": .null, "launchScript": .null, "launchScripts": .null, "worktreeSetupScript": .null,
                    "worktreesFolder": .null,
                ],
            ]
        }

        // MARK: - Threads and turns

        static func thread(_ record: World.ThreadRecord, status: JSON, includeTurns: Bool) -> JSON {
            [
                "id": .string(record.id), "preview": .string(record.preview), "name": record.name.map(JSON.string) ?? .null,
                "ephemeral": false, "modelProvider": "openai", "createdAt": .int(record.createdAt),
                "updatedAt": .int(record.updatedAt), "status": status, "path": .null, "cwd": .string(record.cwd),
                "cliVersion": "0.163.0", "source": "appServer", "gitInfo": .null,
                "turns": includeTurns ? .array(record.turns.map { turn($0) }) : [],
            ]
        }

        static func turn(_ record: World.TurnRecord, items: [JSON]? = nil) -> JSON {
            var durationMs = JSON.null
            if let completed = record.completedAt { durationMs = .int((completed - record.startedAt) * 1000) }
            return [
                "id": .string(record.id), "items": .array(items ?? record.items), "status": .string(record.status),
                "error": record.error, "startedAt": .int(record.startedAt),
                "completedAt": record.completedAt.map(JSON.int) ?? .null, "durationMs": durationMs,
            ]
        }

        /// The turn as `turn/start` answers and `turn/started` announces it.
        static func startedTurn(id: String) -> JSON {
            ["id": .string(id), "items": [], "status": "inProgress", "error": .null]
        }

        /// `thread/start` / `thread/resume` response body.
        static func threadResponse(thread: JSON, cwd: String) -> JSON {
            [
                "thread": thread, "model": "gpt-5-codex", "modelProvider": "openai", "cwd": .string(cwd),
                "approvalPolicy": "on-request",
                "sandbox": ["type": "workspaceWrite", "writableRoots": [.string(cwd)], "networkAccess": true],
                "reasoningEffort": .null,
            ]
        }

        // MARK: - Items (`ThreadItem`, tag `type`)

        static func userMessageItem(id: String, text: String) -> JSON {
            ["type": "userMessage", "id": .string(id), "content": [["type": "text", "text": .string(text)]]]
        }

        static func agentMessageItem(id: String, text: String) -> JSON {
            ["type": "agentMessage", "id": .string(id), "text": .string(text)]
        }

        static func reasoningItem(id: String, summary: [String], content: [String]) -> JSON {
            [
                "type": "reasoning", "id": .string(id),
                "summary": .array(summary.map(JSON.string)), "content": .array(content.map(JSON.string)),
            ]
        }

        static func commandItem(
            id: String, command: String, cwd: String, status: String,
            output: String? = nil, exitCode: Int? = nil, durationMs: Int? = nil
        ) -> JSON {
            [
                "type": "commandExecution", "id": .string(id), "command": .string(command), "cwd": .string(cwd),
                "processId": .null, "source": "agent", "status": .string(status),
                "commandActions": [["type": "unknown", "command": .string(command)]],
                "aggregatedOutput": output.map(JSON.string) ?? .null, "exitCode": exitCode.map(JSON.int) ?? .null,
                "durationMs": durationMs.map(JSON.int) ?? .null,
            ]
        }

        static func fileChange(path: String, kind: String, diff: String) -> JSON {
            ["path": .string(path), "kind": ["type": .string(kind), "movePath": .null], "diff": .string(diff)]
        }

        static func fileChangeItem(id: String, changes: [JSON], status: String) -> JSON {
            ["type": "fileChange", "id": .string(id), "changes": .array(changes), "status": .string(status)]
        }

        // MARK: - Notifications

        static func message(_ method: String, _ params: JSON) -> JSON {
            ["method": .string(method), "params": params]
        }

        static func threadStarted(_ thread: JSON) -> JSON {
            message("thread/started", ["thread": thread])
        }

        static func threadStatusChanged(threadID: String, status: JSON) -> JSON {
            message("thread/status/changed", ["threadId": .string(threadID), "status": status])
        }

        static func turnStarted(threadID: String, turn: JSON) -> JSON {
            message("turn/started", ["threadId": .string(threadID), "turn": turn])
        }

        static func turnCompleted(threadID: String, turn: JSON) -> JSON {
            message("turn/completed", ["threadId": .string(threadID), "turn": turn])
        }

        static func itemStarted(_ item: JSON, threadID: String, turnID: String) -> JSON {
            message("item/started", ["item": item, "threadId": .string(threadID), "turnId": .string(turnID)])
        }

        static func itemCompleted(_ item: JSON, threadID: String, turnID: String) -> JSON {
            message("item/completed", ["item": item, "threadId": .string(threadID), "turnId": .string(turnID)])
        }

        /// The common `{threadId, turnId, itemId, delta}` shape of every streamed delta.
        static func delta(_ method: String, threadID: String, turnID: String, itemID: String, delta: String,
                          extra: [JSON.Member] = []) -> JSON {
            guard case .object(let base) = [
                "threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(itemID),
                "delta": .string(delta),
            ] as JSON else { return .null }
            return message(method, .object(base + extra))
        }

        static func reasoningSummaryPartAdded(threadID: String, turnID: String, itemID: String, index: Int) -> JSON {
            message("item/reasoning/summaryPartAdded", [
                "threadId": .string(threadID), "turnId": .string(turnID), "itemId": .string(itemID),
                "summaryIndex": .int(index),
            ])
        }

        static func planUpdated(threadID: String, turnID: String, explanation: String?, steps: [(String, String)]) -> JSON {
            message("turn/plan/updated", [
                "threadId": .string(threadID), "turnId": .string(turnID),
                "explanation": explanation.map(JSON.string) ?? .null,
                "plan": .array(steps.map { ["step": .string($0.0), "status": .string($0.1)] }),
            ])
        }

        static func diffUpdated(threadID: String, turnID: String, diff: String) -> JSON {
            message("turn/diff/updated", ["threadId": .string(threadID), "turnId": .string(turnID), "diff": .string(diff)])
        }

        static func tokenUsage(threadID: String, turnID: String, input: Int, output: Int, reasoning: Int) -> JSON {
            let breakdown: JSON = [
                "totalTokens": .int(input + output), "inputTokens": .int(input), "cachedInputTokens": 0,
                "outputTokens": .int(output), "reasoningOutputTokens": .int(reasoning),
            ]
            return message("thread/tokenUsage/updated", [
                "threadId": .string(threadID), "turnId": .string(turnID),
                "tokenUsage": ["total": breakdown, "last": breakdown, "modelContextWindow": 272_000],
            ])
        }

        static func error(threadID: String, turnID: String, message text: String, info: String?, willRetry: Bool) -> JSON {
            message("error", [
                "error": ["message": .string(text), "codexErrorInfo": info.map(JSON.string) ?? .null, "additionalDetails": .null],
                "willRetry": .bool(willRetry), "threadId": .string(threadID), "turnId": .string(turnID),
            ])
        }

        static func serverRequestResolved(threadID: String, requestID: JSON) -> JSON {
            message("serverRequest/resolved", ["threadId": .string(threadID), "requestId": requestID])
        }

        static func rateLimitsUpdated() -> JSON {
            message("account/rateLimits/updated", [
                "rateLimits": [
                    "limitId": "codex", "primary": ["usedPercent": 12, "windowDurationMins": 300, "resetsAt": 1_767_010_000],
                    "secondary": .null, "planType": "plus",
                ],
            ])
        }

        // MARK: - Server→client requests (carry an `id`)

        static func request(id: JSON, method: String, params: JSON) -> JSON {
            ["id": id, "method": .string(method), "params": params]
        }

        // MARK: - Synthetic daemon events

        static func codexConnected(workspaceID: String) -> JSON {
            message("codex/connected", ["workspaceId": .string(workspaceID)])
        }

        // MARK: - Misc results

        static func modelList() -> JSON {
            [
                "data": [
                    [
                        "id": "gpt-5-codex", "model": "gpt-5-codex", "displayName": "GPT-5-Codex",
                        "description": "Optimized for coding", "isDefault": true, "defaultReasoningEffort": "medium",
                        "supportedReasoningEfforts": [
                            ["reasoningEffort": "low", "description": "Fast"],
                            ["reasoningEffort": "medium", "description": "Balanced"],
                            ["reasoningEffort": "high", "description": "Thorough"],
                        ],
                    ],
                ],
                "nextCursor": .null,
            ]
        }

        static func rateLimits() -> JSON {
            [
                "rateLimits": [
                    "limitId": "codex", "primary": ["usedPercent": 12, "windowDurationMins": 300, "resetsAt": 1_767_010_000],
                    "secondary": .null, "planType": "plus",
                ],
            ]
        }

        /// Wall-clock milliseconds, for the `emittedAtMs` / `startedAtMs` stamps of current codex.
        static var nowMs: Int {
            Int(Date().timeIntervalSince1970 * 1000)
        }
    }
}
