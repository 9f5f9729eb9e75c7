extension OpenCodeSimulator {
    /// How the simulated `opencode serve` behaves.
    public struct Options: Sendable {
        /// Basic-auth user name (`OPENCODE_SERVER_USERNAME`).
        public var username: String
        /// Basic-auth password (`OPENCODE_SERVER_PASSWORD`); nil ⇒ no auth at all, like the real server.
        public var password: String?
        /// The server's working directory: the default instance directory and where the fixture session lives.
        public var directory: String
        /// `server.heartbeat` cadence on both SSE endpoints (first one one interval after connecting):
        /// 10 s, or 30 s for a legacy server, unless set.
        public var heartbeatInterval: Duration
        /// Pause before each scripted frame (0 for tests; ~30–60 ms lets a human watch `tether demo`).
        public var pacing: Duration
        /// Legacy (0.x – ~1.0) wire shapes: no event `id`, `message.part.updated {part, delta}` per chunk
        /// and no `message.part.delta`, `permission.updated`, `permission.replied {…, permissionID, response}`,
        /// `{info}` without `sessionID`, 30 s heartbeats, and no `/permission` or `/question` routes
        /// (404: no list of pending permissions, replies only on the per-session route).
        public var legacy: Bool
        /// When false, `GET /global/event` is 404 and clients must fall back to `GET /event?directory=`.
        public var serveGlobalEvent: Bool
        /// Forces every prompt's scenario; nil ⇒ chosen from the prompt text (`OpenCodeScenario.forPrompt`).
        public var scenario: OpenCodeScenario?
        /// Benchmark mode: every new `/global/event` connection gets `server.connected`, then this many
        /// `message.part.delta` frames for the busy flood session, then `session.status` idle and
        /// `session.idle` — `flood + 3` frames, as fast as the client reads.
        public var flood: Int?
        /// With `flood`: send the deltas at this many per second instead of as fast as the client
        /// reads, each delta `tokenI sent_ns=NS ` stamped with the wall-clock nanoseconds it was
        /// written (latency and memory benchmarks; see `PacedSchedule`). Set after `init`.
        public var floodRate: Int? = nil
        /// With `flood` and `floodRate`: churn. Every `floodTurns` deltas are a turn of their own in
        /// a session never seen before — a user message, busy, an assistant message, the deltas
        /// of a new part, its final snapshot, idle — so a long paced flood opens tens of thousands
        /// of sessions, messages and parts (the steady-state memory benchmark). Set after `init`.
        public var floodTurns: Int? = nil
        /// With `flood` (not paced): send the legacy frames `message.part.updated {part, delta}` in this
        /// shape instead of `message.part.delta` for one part — a new part per frame, or parts of
        /// `FloodShape.longPartLength` deltas — still `flood + 3` frames. The part snapshot's `text`
        /// is the newest piece only, not the accumulated text a legacy server sent: every frame
        /// stays the same size, so the stream measures per-event cost rather than ever longer
        /// strings. Rendered once at start, so the simulator is never what a client waits for.
        /// Set after `init`.
        public var floodShape: FloodShape? = nil
        /// With `flood`: end each `/global/event` response cleanly once its flood is over, so a
        /// buffered client (`curl | jq`) sees EOF and flushes. A real server never ends this
        /// stream; benchmarks only. Set after `init`.
        public var floodClose = false
        /// Seed the notes' fixture session (`OpenCodeSimulator.fixtureSessionID`, "Fix the build").
        public var seedFixtureSession: Bool
        /// What `GET /global/health` reports.
        public var version: String
        public var faults: Faults
        /// Which server generation to be: 1 (the `opencode-ai` 1.x server, or the legacy Hono
        /// server with `legacy`) or 2 (`@opencode/cli` 2.x: only `/api/*` routes, Basic auth
        /// always on, `{data}` envelopes, the durable session log; protocols/opencode-v2.md).
        /// Set after `init`; with 2, `version` defaults to a 2.x one (see `OpenCode2Routes`).
        public var generation = 1

        public init(
            username: String = "opencode",
            password: String? = nil,
            directory: String = "/home/dev/demo",
            heartbeatInterval: Duration? = nil,
            pacing: Duration = .zero,
            legacy: Bool = false,
            serveGlobalEvent: Bool = true,
            scenario: OpenCodeScenario? = nil,
            flood: Int? = nil,
            seedFixtureSession: Bool = true,
            version: String = "1.14.50-fake",
            faults: Faults = Faults()
        ) {
            self.username = username
            self.password = password
            self.directory = directory
            self.heartbeatInterval = heartbeatInterval ?? .seconds(legacy ? 30 : 10)
            self.pacing = pacing
            self.legacy = legacy
            self.serveGlobalEvent = serveGlobalEvent
            self.scenario = scenario
            self.flood = flood
            self.seedFixtureSession = seedFixtureSession
            self.version = version
            self.faults = faults
        }
    }

    /// Misbehaviours seen in the field, to test a client's recovery.
    public struct Faults: Sendable {
        /// In each turn, close every open SSE connection abruptly once, in the middle of the first
        /// assistant text (after two deltas). The turn goes on; REST keeps the truth.
        public var dropStreamMidTurn: Bool
        /// SSE delivers only `server.connected` and heartbeats; REST keeps working (issue #46733).
        public var heartbeatsOnly: Bool
        /// Write SSE bytes one at a time with a short delay, so frames arrive split anywhere.
        public var dripBytes: Bool
        /// The delay between two dripped bytes.
        public var dripDelay: Duration
        /// Every second `GET /permission` (the 2nd, 4th, …) answers 503, as a server going down
        /// between a client's REST reads would: the last read of a resync fails after the others
        /// succeeded.
        public var failEverySecondPermissionList: Bool
        /// The first `POST /session/{id}/prompt_async` answers 503, as a server going down
        /// would; later ones are served.
        public var failFirstPrompt: PromptFailure?

        public init(
            dropStreamMidTurn: Bool = false,
            heartbeatsOnly: Bool = false,
            dripBytes: Bool = false,
            dripDelay: Duration = .microseconds(200),
            failEverySecondPermissionList: Bool = false,
            failFirstPrompt: PromptFailure? = nil
        ) {
            self.dropStreamMidTurn = dropStreamMidTurn
            self.heartbeatsOnly = heartbeatsOnly
            self.dripBytes = dripBytes
            self.dripDelay = dripDelay
            self.failEverySecondPermissionList = failEverySecondPermissionList
            self.failFirstPrompt = failFirstPrompt
        }
    }

    /// How `Faults.failFirstPrompt` fails.
    public enum PromptFailure: Sendable {
        /// Before the prompt is stored: the session never gets it.
        case beforeStoring
        /// After the prompt is stored and its turn started: only the answer is lost, as when a
        /// client times out on a server that had the prompt.
        case afterStoring
    }
}
