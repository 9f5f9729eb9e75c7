import Foundation

extension CodexAppServerSimulator {
    typealias JSON = OrderedJSON

    /// Where one connection's messages go: a WebSocket's text frames or stdout's lines. `send`
    /// only queues (it never blocks), so the world calls it with its lock held and every
    /// connection sees the messages in the order the world produced them.
    struct Outbound: Sendable {
        var send: @Sendable (String) -> Void
        var close: @Sendable () -> Void
    }

    /// One JSON-RPC session: its own `initialize` and subscriptions (note §6a).
    struct ConnectionState {
        var outbound: Outbound
        var initialized = false
        /// `capabilities.experimentalApi`: only such clients get experimental notifications.
        var experimental = false
        var optOut: Set<String> = []
        var subscriptions: Set<String> = []
        /// It was sent the flood (`--flood`): once per connection.
        var flooded = false
    }

    /// An item of a turn, as the rollout keeps it.
    struct ItemRecord {
        var item: JSON
        var startedAtMs: Int
        var completedAtMs: Int?
        /// Shown by `thread/turns/list`, `thread/items/list` and a resume snapshot: completed,
        /// and not a declined tool call (note §10).
        var persisted: Bool
        /// An in-progress fileChange is in a resume snapshot, with its diff (note §3).
        var inSnapshotWhileRunning: Bool

        var type: String { item["type"]?.stringValue ?? "" }
    }

    struct TurnRecord {
        var id: String
        var startedAtMs: Int
        var completedAtMs: Int?
        var status = "inProgress"
        var error: JSON = .null
        var items: [ItemRecord] = []
    }

    struct ThreadRecord {
        var id: String
        var cwd: String
        var createdAt: Int
        var updatedAt: Int
        var preview = ""
        var name: String?
        var originator: String
        var forkedFromId: String?
        var archived = false
        var loaded = true
        var approvalPolicy: JSON
        var sandbox: JSON
        var model: String
        var turns: [TurnRecord] = []
        /// The running turn, if any.
        var active: CodexAppServerTurn?
        var activeFlags: [String] = []
        var totalInput = 0
        var totalOutput = 0
        var readStateRevision: String?
        /// Commands approved with `acceptForSession` (and file changes, under `"*patch*"`).
        var sessionApprovals: Set<String> = []

        var hasRollout: Bool { !turns.isEmpty }
    }

    /// A server→client request waiting for its first answer.
    struct PendingRequest {
        var id: Int
        var threadID: String
        var turnID: String
        var message: JSON
        var box: AnswerBox
    }

    /// Everything the process holds, behind one lock.
    struct State {
        var connections: [Int: ConnectionState] = [:]
        var nextConnection = 0
        var threads: [String: ThreadRecord] = [:]
        /// Thread ids in creation order.
        var threadOrder: [String] = []
        /// Server→client request ids: integers from 0 shared by the whole process (note §1).
        var nextRequestID = 0
        var pending: [Int: PendingRequest] = [:]
        /// The first `initialize`'s client name: the process-wide originator (note §2).
        var originator: String?
        var requestCount = 0
        var draining = false
        /// Execpolicy prefix rules added by `acceptWithExecpolicyAmendment` (CODEX_HOME-wide).
        var execRules: [[String]] = []

        // MARK: Sending (lock held)

        func send(_ message: JSON, to connection: Int) {
            guard let state = connections[connection] else { return }
            if let method = message["method"]?.stringValue, message["emittedAtMs"] != nil, state.optOut.contains(method) { return }
            state.outbound.send(message.serialized)
        }

        /// To every subscriber of the thread (only those with `experimentalApi` when `experimental`).
        func emit(_ message: JSON, thread threadID: String, experimental: Bool = false) {
            for (id, connection) in connections.sorted(by: { $0.key < $1.key })
            where connection.subscriptions.contains(threadID) && (connection.experimental || !experimental) {
                send(message, to: id)
            }
        }

        /// To every initialized connection (`thread/started`, `thread/status/changed`, note §7.8).
        func broadcast(_ message: JSON) {
            for (id, connection) in connections.sorted(by: { $0.key < $1.key }) where connection.initialized {
                send(message, to: id)
            }
        }

        func status(of threadID: String) -> JSON {
            guard let thread = threads[threadID], thread.loaded, !thread.archived else { return ["type": "notLoaded"] }
            guard thread.active != nil else { return ["type": "idle"] }
            return ["type": "active", "activeFlags": .array(thread.activeFlags.map(JSON.string))]
        }

        func broadcastStatus(of threadID: String) {
            broadcast(CodexAppServerWire.notification("thread/status/changed", [
                "threadId": .string(threadID), "status": status(of: threadID),
            ]))
        }
    }
}
