import Foundation

extension CodexAppServerSimulator {
    /// Builders for the payloads codex 0.163 sends, members in its order (transcripts beside the note).
    enum Shapes {
        static let cliVersion = "0.163.0"
        static let modelProvider = "openai"
        static let contextWindow = 258_400

        /// The `Thread` object. `listed` is the `thread/list` flavour (`canAcceptDirectInput: null`).
        static func thread(_ record: ThreadRecord, status: JSON, codexHome: String, turns: [JSON] = [], listed: Bool = false) -> JSON {
            let environments: JSON = record.archived ? .null : [[
                "environmentId": "local", "cwd": .string(record.cwd), "runtimeWorkspaceRoots": [.string(record.cwd)],
            ]]
            return [
                "id": .string(record.id), "environments": environments, "extra": .null, "sessionId": .string(record.id),
                "forkedFromId": record.forkedFromId.map(JSON.string) ?? .null, "parentThreadId": .null,
                "preview": .string(record.preview), "ephemeral": false, "section": .null, "sectionEnteredAt": .null,
                "projectId": .null, "historyMode": "paginated", "modelProvider": .string(modelProvider),
                "model": .string(record.model), "reasoningEffort": .null, "createdAt": .int(record.createdAt),
                "updatedAt": .int(record.updatedAt), "recencyAt": .int(record.updatedAt), "status": status,
                "path": .string(rolloutPath(record, codexHome: codexHome)), "cwd": .string(record.cwd),
                "cliVersion": .string(cliVersion), "originator": .string(record.originator), "source": "vscode",
                "canAcceptDirectInput": listed ? .null : true, "threadSource": .null, "agentNickname": .null,
                "agentRole": .null, "gitInfo": .null, "name": record.name.map(JSON.string) ?? .null,
                "daybreakEnabled": .null, "turns": .array(turns),
            ]
        }

        static func rolloutPath(_ record: ThreadRecord, codexHome: String) -> String {
            let date = Date(timeIntervalSince1970: TimeInterval(record.createdAt))
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd'T'HH-mm-ss"
            let stamp = formatter.string(from: date)
            let file = "rollout-\(stamp)-\(record.id).jsonl"
            if record.archived { return "\(codexHome)/archived_sessions/\(file)" }
            formatter.dateFormat = "yyyy/MM/dd"
            return "\(codexHome)/sessions/\(formatter.string(from: date))/\(file)"
        }

        /// `thread/start`, `thread/resume` and `thread/fork` results around the thread.
        static func threadResponse(_ record: ThreadRecord, thread: JSON, extra: [JSON.Member] = []) -> JSON {
            let base: JSON = [
                "thread": thread, "model": .string(record.model), "modelProvider": .string(modelProvider),
                "serviceTier": .null, "disabledPluginIds": [], "cwd": .string(record.cwd),
                "runtimeWorkspaceRoots": [.string(record.cwd)], "instructionSources": [],
                "approvalPolicy": record.approvalPolicy, "approvalsReviewer": "user", "sandbox": record.sandbox,
                "reasoningEffort": .null, "multiAgentMode": "explicitRequestOnly",
            ]
            guard case .object(let members) = base else { return base }
            return .object(members + extra)
        }

        /// `sandbox` as the thread/start response spells it, or nil for an unknown mode.
        static func sandbox(_ mode: String?) -> JSON? {
            switch mode {
            case nil, "read-only":
                ["type": "readOnly", "networkAccess": false]
            case "workspace-write":
                ["type": "workspaceWrite", "writableRoots": [], "networkAccess": false, "excludeTmpdirEnvVar": false, "excludeSlashTmp": false]
            case "danger-full-access":
                ["type": "dangerFullAccess"]
            default:
                nil
            }
        }

        // MARK: Turns

        static func turn(id: String, items: [JSON], itemsView: String, status: String, error: JSON = .null,
                         startedAt: Int?, completedAt: Int?, durationMs: Int?) -> JSON {
            [
                "id": .string(id), "rootTurnId": .string(id), "items": .array(items), "itemsView": .string(itemsView),
                "status": .string(status), "error": error, "startedAt": startedAt.map(JSON.int) ?? .null,
                "completedAt": completedAt.map(JSON.int) ?? .null, "durationMs": durationMs.map(JSON.int) ?? .null,
            ]
        }

        /// A turn of the history (`thread/turns/list`, `thread/read`, a resume snapshot).
        /// `summary`: user messages and the last agent message; `full`: every persisted item;
        /// `notLoaded`: none. An in-progress turn in a snapshot renames its items `item-N` and
        /// adds the in-progress fileChange (note §3 `thread/resume`).
        static func historyTurn(_ record: TurnRecord, itemsView: String, snapshot: Bool = false) -> JSON {
            var records = record.items.filter { $0.persisted || (snapshot && record.status == "inProgress" && $0.inSnapshotWhileRunning) }
            if itemsView == "summary" {
                let lastAgent = records.lastIndex { $0.type == "agentMessage" }
                records = records.enumerated().filter { $0.element.type == "userMessage" || $0.offset == lastAgent }.map(\.element)
            }
            var items = itemsView == "notLoaded" ? [] : records.map(\.item)
            if snapshot, record.status == "inProgress" {
                for index in items.indices where items[index]["type"]?.stringValue == "userMessage" {
                    items[index]["id"] = .string("item-\(index + 1)")
                }
            }
            return turn(id: record.id, items: items, itemsView: itemsView, status: record.status, error: record.error,
                        startedAt: record.startedAtMs / 1000, completedAt: record.completedAtMs.map { $0 / 1000 },
                        durationMs: record.completedAtMs.map { $0 - record.startedAtMs })
        }

        // MARK: Items

        static func userMessage(id: String, clientID: String?, content: JSON) -> JSON {
            ["type": "userMessage", "id": .string(id), "clientId": clientID.map(JSON.string) ?? .null, "content": content]
        }

        static func agentMessage(id: String, text: String) -> JSON {
            [
                "type": "agentMessage", "id": .string(id), "text": .string(text), "phase": .null,
                "memoryCitation": .null, "delivery": .null, "questions": .null,
            ]
        }

        static let command = "/bin/bash -lc 'touch created_by_codex.txt && echo done'"
        static let commandLine = "touch created_by_codex.txt && echo done"

        static func commandExecution(id: String, cwd: String, status: String, processID: String? = nil,
                                     source: String = "agent", output: String? = nil, exitCode: Int? = nil,
                                     durationMs: Int? = nil) -> JSON {
            [
                "type": "commandExecution", "id": .string(id), "pluginId": .null, "scriptPath": .null,
                "command": .string(command), "cwd": .string(cwd), "processId": processID.map(JSON.string) ?? .null,
                "source": .string(source), "status": .string(status), "commandActions": commandActions,
                "aggregatedOutput": output.map(JSON.string) ?? .null, "exitCode": exitCode.map(JSON.int) ?? .null,
                "durationMs": durationMs.map(JSON.int) ?? .null,
            ]
        }

        static var commandActions: JSON { [["type": "unknown", "command": .string(commandLine)]] }

        static let patchedFile = "patched_by_codex.txt"
        static let patchContent = "hello from apply_patch\n"

        static func fileChange(id: String, cwd: String, status: String) -> JSON {
            [
                "type": "fileChange", "id": .string(id),
                "changes": [["path": .string("\(cwd)/\(patchedFile)"), "kind": ["type": "add"], "diff": .string(patchContent)]],
                "status": .string(status),
            ]
        }

        static let unifiedDiff = "diff --git a/\(patchedFile) b/\(patchedFile)\nnew file mode 100644\n"
            + "index 0000000000000000000000000000000000000000..86ddfb8cbbf96928cb6ee38b9174645983db4797\n"
            + "--- /dev/null\n+++ b/\(patchedFile)\n@@ -0,0 +1 @@\n+hello from apply_patch\n"

        // MARK: Notifications' params

        static func tokenUsage(threadID: String, turnID: String, totalInput: Int, totalOutput: Int) -> JSON {
            func breakdown(_ input: Int, _ output: Int) -> JSON {
                [
                    "totalTokens": .int(input + output), "inputTokens": .int(input), "cachedInputTokens": 0,
                    "cacheWriteInputTokens": 0, "outputTokens": .int(output), "reasoningOutputTokens": 0,
                ]
            }
            return [
                "threadId": .string(threadID), "turnId": .string(turnID),
                "tokenUsage": [
                    "total": breakdown(totalInput, totalOutput), "last": breakdown(10, 5),
                    "modelContextWindow": .int(contextWindow),
                ],
            ]
        }

        static var rateLimits: JSON {
            [
                "rateLimits": [
                    "limitId": "codex", "limitName": .null, "normalModelSlug": .null, "primary": .null,
                    "secondary": .null, "credits": .null, "individualLimit": .null, "spendControlReached": .null,
                    "planType": .null, "rateLimitReachedType": .null,
                ],
            ]
        }

        static func readState(firstUnreadTurn turnID: String, revision: String) -> JSON {
            ["firstUnread": ["type": "turn", "turnId": .string(turnID)], "revision": .string(revision)]
        }

        /// A `cursor` as codex's history pages spell it (an opaque JSON string).
        static func backwardsCursor(threadID: String, ordinal: Int, scope: String) -> JSON {
            .string(#"{"requestedThreadId":"\#(threadID)","rolloutOrdinal":\#(ordinal),"includeAnchor":true,"scope":{"kind":"\#(scope)"}}"#)
        }
    }
}
