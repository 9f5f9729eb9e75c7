extension CodexMonitorSimulator {
    /// How the simulated `codex-monitor-daemon` (and the `codex app-server` behind it) behaves.
    public struct Options: Sendable {
        /// The shared secret (`--token`). nil ⇒ `--insecure-no-auth`: every connection is
        /// authenticated from the start, and a later `auth` answers `unknown method: auth`.
        public var token: String?
        /// What `list_workspaces` reports (`workspaces.json`).
        public var workspaces: [Workspace]
        /// Pause before each scripted app-server message (0 for tests; ~30–60 ms for `tether demo`).
        public var pacing: Duration
        /// Requests are handled concurrently, as upstream does, and answered late: requests that
        /// arrive together are answered in reverse order, and a response comes after the first
        /// events it caused (`send_user_message` after `turn/started`, `turn_interrupt` after
        /// `turn/completed`, `respond_to_server_request` after `serverRequest/resolved`).
        /// Off: requests are handled one at a time and answered before the events they cause
        /// (except `start_thread` and `connect_workspace`, whose events come first as in the notes).
        public var reorderResponses: Bool
        /// Close the first connection that has had this many lines written to it (once per simulator).
        public var dropConnectionAfter: Int?
        /// Simulate `RecvError::Lagged` deterministically: every connection misses each streamed
        /// item's deltas after the first one (a contiguous run, as a lagging tokio receiver skips),
        /// so only `item/completed` carries the whole text.
        public var lagEvents: Bool
        /// Undelivered events a connection may hold before the oldest are skipped (the daemon's
        /// broadcast channel capacity, 2048). Responses are never skipped.
        public var broadcastCapacity: Int
        /// Which `codex app-server` sits behind the daemon.
        public var codex: CodexFlavor
        /// Forces every turn's script; nil ⇒ chosen from the prompt text (`CodexMonitorScenario.forPrompt`).
        public var scenario: CodexMonitorScenario?
        /// Seed `thr_0` ("fix tests", one completed turn, not loaded) in the first workspace's
        /// directory, and `thr_elsewhere` in another directory (`thread/list` is not filtered by cwd).
        public var seedHistory: Bool
        /// Relay to a real `codex app-server` instead of scripting turns (see `RelayOptions`).
        public var relay: RelayOptions?
        /// An older or forked daemon without these methods: each answers `unknown method: NAME`,
        /// as the daemon's method table does for a name it lacks. Set after `init`.
        public var missingMethods: Set<String> = []
        /// Benchmarks: every connection, once authenticated, gets a flood of this many
        /// `item/agentMessage/delta`s (`CodexMonitorSimulator.Flood`), written as fast as it reads
        /// (not through the broadcast channel, so nothing is skipped). Set after `init`.
        public var flood: Int? = nil
        /// With `flood`: how parts are opened. Set after `init`.
        public var floodShape: FloodShape = .longParts
        /// With `flood`: close each connection once its flood (and anything queued before) is
        /// written, so a buffered client (`nc | jq`) sees EOF and flushes. Set after `init`.
        public var floodClose = false

        public init(
            token: String? = nil,
            workspaces: [Workspace] = [Workspace(id: "ws-1", name: "demo", path: "/srv/demo")],
            pacing: Duration = .zero,
            reorderResponses: Bool = false,
            dropConnectionAfter: Int? = nil,
            lagEvents: Bool = false,
            broadcastCapacity: Int = 2048,
            codex: CodexFlavor = .current,
            scenario: CodexMonitorScenario? = nil,
            seedHistory: Bool = true,
            relay: RelayOptions? = nil
        ) {
            self.token = token
            self.workspaces = workspaces
            self.pacing = pacing
            self.reorderResponses = reorderResponses
            self.dropConnectionAfter = dropConnectionAfter
            self.lagEvents = lagEvents
            self.broadcastCapacity = broadcastCapacity
            self.codex = codex
            self.scenario = scenario
            self.seedHistory = seedHistory
            self.relay = relay
        }
    }

    /// One entry of `workspaces.json`.
    public struct Workspace: Sendable, Equatable {
        public var id: String
        public var name: String
        public var path: String
        /// Whether an app-server session already exists for it (so `connect_workspace` is optional).
        public var connected: Bool

        public init(id: String, name: String, path: String, connected: Bool = false) {
            self.id = id
            self.name = name
            self.path = path
            self.connected = connected
        }
    }

    /// The `codex app-server` generation behind the daemon.
    public enum CodexFlavor: Sendable, Equatable {
        /// As observed with codex-cli 0.163 (notes §8): top-level `emittedAtMs` on notifications,
        /// `kind` and `availableDecisions` on command approvals, `serverRequest/resolved`,
        /// `thread/status/changed`, items inside `turn/completed`, `item/fileChange/patchUpdated`,
        /// and `thread/resume` re-sending the thread's still-pending approval requests.
        case current
        /// The documented older shape: none of the above; `item/fileChange/outputDelta` instead.
        case legacy
    }

    /// A request line as the daemon received it, for tests.
    public struct ReceivedRequest: Sendable, Equatable {
        /// 1-based, in accept order.
        public var connection: Int
        /// The `id` member as compact JSON text (`7`, `"7"`, `1.5`), nil when absent.
        public var id: String?
        public var method: String
        /// The `params` member as compact JSON text (`null` when absent).
        public var params: String
    }

    /// A line the simulated daemon wrote to `codex app-server`'s stdin: the requests it forwarded
    /// (`turn/start` with the sandbox and approval policy it derived) and the responses relayed by
    /// `respond_to_server_request` (`{"id":…,"result":…}`, verbatim).
    public struct AppServerInput: Sendable, Equatable {
        public var workspaceID: String
        /// Compact JSON text of the whole message.
        public var message: String
    }
}
