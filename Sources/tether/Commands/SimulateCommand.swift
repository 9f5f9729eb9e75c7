import ArgumentParser
import Foundation
import Synchronization
import Logging
import TetherCore
import TetherSim

/// `tether simulate BACKEND`: a faithful simulator of a backend on loopback, for trying Tether,
/// writing scripts, or reproducing a problem without a real agent.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run a backend simulator on loopback; prints its URL on the first line and serves until interrupted.",
        discussion: """
            Backends: opencode, codex-worker, codexmonitor (prints HOST:PORT), codex (the `codex app-server` \
            wire: prints the ws:// URL; --unix PATH serves the daemon's WebSocket-over-unix-socket and prints \
            unix://PATH; --stdio speaks NDJSON on stdin/stdout, prints nothing else there, and exits at stdin's \
            EOF), notification (a signaling relay and a desktop peer; prints the ws:// URL), sse (a generic SSE test server: /flood?n=N&size=S, \
            /paced?rate=R&n=N (timestamped frames at R a second), \
            /resume?total=N&dropEvery=K, /ticker?interval_ms=I&count=C, /stall?after=N, /status/CODE, …).
            Scenarios (opencode): \(OpenCodeScenario.allCases.map(\.rawValue).joined(separator: ", ")); \
            without --scenario the prompt's words choose (ask to run/remove/clean something for an approval).
            Codex turns (--scenario \(CodexAppServerScenario.allCases.map(\.rawValue).joined(separator: "|")) forces one): \
            the prompt's words choose: `fail` (an `error`, then the turn failed), `question` \
            (item/tool/requestUserInput), `patch` (a fileChange and item/fileChange/requestApproval), `cmd` \
            (a commandExecution and item/commandExecution/requestApproval), else the reply \
            `Fake model reply. You said: <prompt>` in 12-character deltas; `slow` puts the deltas a second apart. \
            Decisions as codex takes them: accept, acceptForSession (not asked again on that thread), \
            acceptWithExecpolicyAmendment (the next proposal moves on) run it; decline declines it and the turn goes \
            on; cancel ends the turn interrupted; approvalPolicy "never" asks nothing. A pending request outlives a \
            ws client and is sent again, same id, to whoever calls thread/resume; the first answer wins. \
            Codex faults: --overload-every N refuses every Nth request with -32001; --drain-on-sigterm makes the \
            first SIGTERM drain (new work refused with serverShuttingDown; exits once no turn runs; a second \
            SIGTERM exits at once).
            Benchmark floods: opencode, codexmonitor and codex (a turn of N deltas in thread \(CodexAppServerSimulator.floodThreadID), to each connection that resumes it) take --flood N [--flood-shape long-parts|new-parts]; \
            a codex-worker turn whose prompt says `flood N` (parts of 1,000 deltas) or `flood N new` (a new \
            item per delta) is one; --flood-close ends each flood's stream so a buffered `curl | jq` sees EOF. \
            Paced (opencode): --flood N --flood-rate R [--flood-turns L: every L deltas a turn in a new session].
            """)

    enum Simulated: String, ExpressibleByArgument, CaseIterable {
        case opencode
        case codexWorker = "codex-worker"
        case codexmonitor
        case codex
        case notification
        case sse
    }

    @OptionGroup var options: LoggingOptions
    @Argument(help: ArgumentHelp("The backend to simulate: \(Simulated.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "backend"))
    var backend: Simulated
    @Option(help: ArgumentHelp("Where to listen (default: 127.0.0.1:0, a free port, printed on stdout).", valueName: "host:port"), transform: ListenArgument.parse)
    var listen = HostPort(host: "127.0.0.1", port: 0)
    @Option(help: "Force a scripted scenario for every turn.") var scenario: String?
    @Option(help: "Require this password (opencode, user \"opencode\") or bearer token (codex-worker; codex: on the WebSocket upgrade).") var token: String?
    @Option(help: ArgumentHelp("Time between scripted events, in milliseconds; fractions work (codex-worker keeps 0.2 ms, 5,000 events a second, on average).", valueName: "ms"))
    var pacing: Double = 40
    @Flag(help: "OpenCode: be the legacy Hono server (0.x–1.0): its event shapes, 30 s heartbeats, no /permission or /question routes.")
    var legacy = false
    @Option(help: ArgumentHelp("OpenCode: the server generation, 1 (opencode-ai 1.x; with --legacy the Hono server) or 2 (@opencode/cli 2.x: only /api/* routes, Basic auth always on, the durable session log). A 2.x simulator without --token makes a password up and prints it on stderr, as `opencode serve` does.", valueName: "1|2"))
    var generation = 1
    @Flag(help: "CodexMonitor: answer requests out of order, some after the events they caused.") var reorder = false
    @Flag(name: .customLong("contract-shape"), help: "Notification: the desktop answers in the client contract's shapes (default: the real desktop's).")
    var contractShape = false
    @Option(help: ArgumentHelp("OpenCode: flood every /global/event connection (2.x: /api/event, a turn of N `session.text.delta`s) with N deltas; CodexMonitor: every authenticated connection; codex: each connection that resumes the flood thread (benchmarks).", valueName: "N"))
    var flood: Int?
    @Option(name: .customLong("flood-shape"), help: ArgumentHelp("With --flood: long-parts (1,000 deltas a part) or new-parts (a part per delta, never completed). OpenCode sends these as legacy `message.part.updated {part, delta}` frames; without it, `message.part.delta`s of one part.", valueName: "shape"))
    var floodShape: String?
    @Flag(name: .customLong("flood-close"), help: "Benchmarks: end each flood's stream once it is over (OpenCode: the /global/event response; Codex Worker: a job stream after job.finished; CodexMonitor: the connection), so a buffered `curl | jq` sees EOF. Real servers never do.")
    var floodClose = false
    @Option(name: .customLong("flood-rate"), help: ArgumentHelp("OpenCode: with --flood, send R deltas a second, each stamped with its wall-clock send time (sent_ns=…; latency and memory benchmarks).", valueName: "R"))
    var floodRate: Int?
    @Option(name: .customLong("flood-turns"), help: ArgumentHelp("OpenCode: with --flood-rate, churn: every L deltas are a turn in a new session, with new messages and a new part (the steady-state memory benchmark).", valueName: "L"))
    var floodTurns: Int?
    @Option(help: ArgumentHelp("Codex Worker: events kept per job (the real worker's WORKER_EVENT_RETENTION).", valueName: "N"))
    var retention: Int = 2000
    @Option(name: .customLong("relay-codex"), help: ArgumentHelp("CodexMonitor: relay to a real `codex app-server` at PATH instead of scripting turns.", valueName: "PATH"))
    var relayCodex: String?
    @Option(name: .customLong("codex-home"), help: ArgumentHelp("CodexMonitor relay: CODEX_HOME for codex; codex: the codexHome it reports (nothing is written).", valueName: "DIR"))
    var codexHome: String?
    @Option(name: .customLong("workspace-dir"), help: ArgumentHelp("CodexMonitor: the path of workspace ws-1.", valueName: "DIR"))
    var workspaceDir: String?
    @Flag(help: "Codex: speak NDJSON on stdin/stdout (what a profile's `command` runs); exit at stdin's EOF.")
    var stdio = false
    @Option(help: ArgumentHelp("Codex: serve the WebSocket protocol on a unix socket at PATH (the daemon's transport; no auth).", valueName: "PATH"))
    var unix: String?
    @Option(name: .customLong("overload-every"), help: ArgumentHelp("Codex: answer every Nth request `-32001 Server overloaded; retry later.`.", valueName: "N"))
    var overloadEvery: Int?
    @Flag(name: .customLong("drain-on-sigterm"), help: "Codex: the first SIGTERM drains as codex does (see above); without it SIGTERM stops at once.")
    var drainOnSigterm = false

    func validate() throws {
        guard generation == 1 || generation == 2 else {
            throw ValidationError("--generation takes 1 or 2; got \(generation)")
        }
        if generation == 2, legacy || floodShape != nil || floodRate != nil {
            throw ValidationError("--generation 2 has no --legacy, --flood-shape or --flood-rate: its flood is `session.text.delta`s of one text item (--flood N [--flood-close])")
        }
        if let floodRate, floodRate < 1 {
            throw ValidationError("--flood-rate takes a positive number of deltas per second")
        }
        if !pacing.isFinite || pacing < 0 || pacing > 3_600_000 {
            throw ValidationError("--pacing is milliseconds between events, from 0 to 3600000 (an hour); got \(pacing)")
        }
        if floodRate != nil, flood == nil {
            throw ValidationError("--flood-rate paces --flood: pass --flood N too")
        }
        if let floodTurns {
            guard floodTurns >= 1 else { throw ValidationError("--flood-turns takes a positive number of deltas per turn") }
            guard floodRate != nil else { throw ValidationError("--flood-turns shapes a paced flood: pass --flood N --flood-rate R too") }
        }
        if let floodShape {
            guard FloodShape(rawValue: floodShape) != nil else {
                throw ValidationError("--flood-shape takes \(FloodShape.allCases.map(\.rawValue).joined(separator: " or ")); got \(floodShape)")
            }
            guard flood != nil else { throw ValidationError("--flood-shape shapes --flood: pass --flood N too") }
            if floodRate != nil { throw ValidationError("--flood-shape floods as fast as the client reads: drop --flood-rate") }
        }
        if let flood, flood < 0 {
            throw ValidationError("--flood takes a number of deltas, 0 or more")
        }
        if let scenario, OpenCodeScenario(rawValue: scenario) == nil, backend == .opencode {
            throw ValidationError("unknown scenario \"\(scenario)\"; use one of: \(OpenCodeScenario.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        try validateCodex()
    }

    private var pacingDuration: Duration { .nanoseconds(Int64((pacing * 1_000_000).rounded())) }

    func run() async throws {
        try await reportingFailures {
            let logger = LogSetup.logger(verbosity: options.verbose)
            if backend == .codex {
                try await runCodex(logger: logger)
                return
            }
            let port = UInt16(listen.port)  // 0–65535 by the parse
            let url: URL
            let stop: @Sendable () async -> Void
            switch backend {
            case .opencode:
                var simOptions = OpenCodeSimulator.Options(
                    password: token, pacing: pacingDuration, legacy: legacy,
                    scenario: scenario.flatMap(OpenCodeScenario.init(rawValue:)), flood: flood)
                simOptions.floodRate = floodRate
                simOptions.floodTurns = floodTurns
                simOptions.floodShape = floodShape.flatMap(FloodShape.init(rawValue:))
                simOptions.floodClose = floodClose
                simOptions.generation = generation
                let simulator = OpenCodeSimulator(options: simOptions, logger: logger)
                url = try await simulator.start(host: listen.host, port: port)
                if generation == 2, token == nil {
                    FileHandle.standardError.write(Data("opencode 2.x simulator: server password \(simulator.currentPassword ?? "") (user opencode)\n".utf8))
                }
                stop = { await simulator.stop() }
            case .codexWorker:
                var simOptions = CodexWorkerSimulator.Options(token: token, retention: retention, pacing: pacingDuration)
                simOptions.closeFinishedStreams = floodClose
                let simulator = CodexWorkerSimulator(options: simOptions, logger: logger)
                url = try await simulator.start(host: listen.host, port: port)
                stop = { await simulator.stop() }
            case .codexmonitor:
                var simOptions = CodexMonitorSimulator.Options(token: token, pacing: pacingDuration, reorderResponses: reorder)
                if let workspaceDir { simOptions.workspaces = [.init(id: "ws-1", name: "demo", path: workspaceDir)] }
                simOptions.relay = relayCodex.map { .init(codexPath: $0, codexHome: codexHome) }
                simOptions.flood = flood
                simOptions.floodShape = floodShape.flatMap(FloodShape.init(rawValue:)) ?? .longParts
                simOptions.floodClose = floodClose
                let simulator = CodexMonitorSimulator(options: simOptions, logger: logger)
                let bound = try await simulator.start(host: listen.host, port: listen.port)
                url = URL(string: "tcp://\(bound.host):\(bound.port)")!
                stop = { await simulator.stop() }
            case .codex:
                return  // runCodex above
            case .notification:
                let simulator = NotificationSimulator(options: .init(shape: contractShape ? .contract : .desktop), logger: logger)
                url = try await simulator.start(host: listen.host, port: port)
                stop = { await simulator.stop() }
            case .sse:
                let server = SSEScriptServer(logger: logger)
                url = try await server.start(host: listen.host, port: port)
                stop = { await server.stop() }
            }
            // A TCP daemon is addressed as HOST:PORT (a profile's `address`); HTTP servers by URL.
            let printed = url.scheme == "tcp" ? "\(url.host ?? ""):\(url.port ?? 0)" : url.absoluteString
            LineOutput.standardOutput.write(printed + "\n")
            LineOutput.standardError.write("tether simulate: \(backend.rawValue) simulator listening on \(printed); Ctrl-C stops it\n")
            if let profile = profileReaching(printed) {
                LineOutput.standardError.write("a profile that reaches it (for your config.toml; `tether -p sim check` tries it):\n\(profile)")
            }
            await waitForInterrupt()
            await stop()
        }
    }
}

extension SimulateCommand {
    /// The `[profiles.sim]` table that reaches this simulator at `address`, or nil for `sse` (no
    /// backend of that kind). A token is named as an environment variable, never printed.
    func profileReaching(_ address: String) -> String? {
        let lines: [String]
        switch backend {
        case .opencode:
            lines = ["backend = \"opencode\"", "url = \"\(address)\""]
                + (token == nil
                    ? generation == 2 ? ["password = { env = \"OPENCODE_PASSWORD\" }   # the password printed above (2.x always has one)"] : []
                    : ["password = { env = \"OPENCODE_SERVER_PASSWORD\" }   # the --token you gave"])
        case .codexWorker:
            lines = ["backend = \"codex-worker\"", "url = \"\(address)\""]
                + (token == nil ? [] : ["token = { env = \"WORKER_TOKEN\" }   # the --token you gave"])
        case .codexmonitor:
            lines = ["backend = \"codexmonitor\"", "address = \"\(address)\""]
                + (token == nil ? [] : ["token = { env = \"CODEXMONITOR_TOKEN\" }   # the --token you gave"])
        case .codex:
            if let unix {
                lines = ["backend = \"codex\"", "daemon = true", "socket = \"\(unix)\""]
            } else {
                lines = ["backend = \"codex\"", "url = \"\(address)\""]
                    + (token == nil ? [] : ["token = { env = \"CODEX_APP_SERVER_TOKEN\" }   # the --token you gave"])
            }
        case .notification:
            lines = ["backend = \"notification\"", "url = \"\(address)\""]
        case .sse:
            return nil
        }
        return (["[profiles.sim]"] + lines).map { "  " + $0 + "\n" }.joined()
    }
}

/// Suspends until SIGINT or SIGTERM.
func waitForInterrupt() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let once = OnceFlag()
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                if once.set() { continuation.resume() }
            }
            source.resume()
            sources.append(source)
        }
        SignalSources.keep(sources)
    }
}

/// Keeps signal sources alive for the life of the process.
enum SignalSources {
    nonisolated(unsafe) private static var retained: [any DispatchSourceSignal] = []
    static func keep(_ sources: [any DispatchSourceSignal]) { retained += sources }
}

final class OnceFlag: Sendable {
    private let done = Mutex(false)
    func set() -> Bool {
        done.withLock { done in
            if done { return false }
            done = true
            return true
        }
    }
}
