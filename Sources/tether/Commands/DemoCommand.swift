import ArgumentParser
import Foundation
import Logging
import TetherCodexAppServer
import TetherCodexMonitor
import TetherCodexWorker
import TetherCore
import TetherNotification
import TetherOpenCode
import TetherSim

/// `tether demo`: the embedded default. Simulators start in-process and whole scripted sessions
/// run through the real adapters: a turn streams, an approval is requested and answered, the
/// turn completes. Nothing to install, nothing to configure.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run scripted sessions against built-in simulators: stream, approve, complete.",
        discussion: "Readable on a terminal, JSON Lines when piped (`tether demo | jq -c .type`). Narration goes to stderr.")

    @OptionGroup var options: ViewOptions
    @Option(help: ArgumentHelp("Pause between scripted events, in milliseconds.", valueName: "ms")) var pacing: Int = 40

    func run() async throws {
        try await reportingFailures {
            let context = CommandContext(try options.global())
            var simulatorLogger = context.logger
            // The simulators are scenery: their logs only with -v.
            simulatorLogger.logLevel = options.verbose > 0 ? context.logger.logLevel : .critical
            let narrator = Narrator(style: Style.forStream(.standardError, environment: context.environment.variables))

            let pacing = Duration.milliseconds(self.pacing)
            let logger = context.logger
            let scenes: [DemoScene] = [
                // OpenCode: a prompt that asks to remove something makes the agent ask permission.
                DemoScene(profile: "demo-opencode", backend: .openCode, prompt: "Clean the build dir and say done") {
                    let simulator = OpenCodeSimulator(options: .init(password: "demo-password", pacing: pacing), logger: simulatorLogger)
                    let url = try await simulator.start()
                    let backend = OpenCodeBackend(configuration: .init(baseURL: url.absoluteString, password: "demo-password",
                                                                       directory: nil, profile: "demo-opencode"), logger: logger)
                    return ("OpenCode simulator at \(url.absoluteString) (Basic auth on)", backend, { await simulator.stop() })
                },
                // OpenCode 2.x: the same prompt over `/api/*` (Basic auth always on), the turn an
                // execution, the approval answered with `{decision}`.
                DemoScene(profile: "demo-opencode-2", backend: .openCode, prompt: "Clean the build dir and say done") {
                    var options = OpenCodeSimulator.Options(password: "demo-password", pacing: pacing)
                    options.generation = 2
                    let simulator = OpenCodeSimulator(options: options, logger: simulatorLogger)
                    let url = try await simulator.start()
                    let backend = OpenCodeBackend(configuration: .init(baseURL: url.absoluteString, password: "demo-password",
                                                                       directory: nil, profile: "demo-opencode-2"), logger: logger)
                    return ("OpenCode 2.x simulator at \(url.absoluteString) (/api/*, Basic auth always on)", backend, { await simulator.stop() })
                },
                // Codex Worker: a thread, a job, a command approval.
                DemoScene(profile: "demo-codex-worker", backend: .codexWorker, prompt: "run the tests and approve it") {
                    let simulator = CodexWorkerSimulator(options: .init(token: "demo-token", pacing: pacing), logger: simulatorLogger)
                    let url = try await simulator.start()
                    let backend = CodexWorkerBackend(configuration: .init(baseURL: url.absoluteString, token: "demo-token",
                                                                          profile: "demo-codex-worker"), logger: logger)
                    return ("Codex Worker simulator at \(url.absoluteString) (Bearer token on)", backend, { await simulator.stop() })
                },
                // Codex itself: `codex app-server` over ws:// with a capability token, a command approval.
                DemoScene(profile: "demo-codex", backend: .codex, prompt: "run the cmd that lists the files") {
                    let simulator = CodexAppServerSimulator(options: .init(token: "demo-token", pacing: pacing), logger: simulatorLogger)
                    let url = try await simulator.start()
                    let backend = CodexAppServerBackend(configuration: .init(reach: .webSocket(url: url.absoluteString, token: "demo-token"),
                                                                             profile: "demo-codex"), logger: logger)
                    return ("codex app-server simulator at \(url.absoluteString) (capability token on)", backend, {
                        await backend.shutdown()
                        await simulator.stop()
                    })
                },
                // CodexMonitor: a daemon over TCP, raw Codex app-server events, a command approval.
                DemoScene(profile: "demo-codexmonitor", backend: .codexMonitor, prompt: "run the tests") {
                    let simulator = CodexMonitorSimulator(options: .init(token: "demo-token", pacing: pacing), logger: simulatorLogger)
                    let bound = try await simulator.start()
                    let backend = CodexMonitorBackend(configuration: .init(host: bound.host, port: bound.port, token: "demo-token",
                                                                           workspace: "ws-1", profile: "demo-codexmonitor"), logger: logger)
                    return ("CodexMonitor daemon simulator at \(bound.host):\(bound.port) (token auth on)", backend, { await simulator.stop() })
                },
            ]
            var outcomes: [String] = []
            for scene in scenes {
                let (description, backend, stop) = try await scene.start()
                narrator.say(description)
                let printer = context.makePrinter(profile: scene.profile, backend: scene.backend)
                let session = try await backend.createSession(SessionCreateRequest(title: "Tether demo"))
                printer.print(.session(.sessionCreated, session))
                narrator.say("tether -p \(scene.profile) send \(session.id) \"\(scene.prompt)\" --follow")
                let outcome = try await followAnswering(backend, SendRequest(session: session.id, text: scene.prompt),
                                                        printer: printer, narrator: narrator, decision: .accept)
                printer.finish()
                await stop()
                outcomes.append("\(scene.backend.rawValue) turn \(outcome)")
            }
            outcomes.append("notification push " + (try await notificationScene(context: context, narrator: narrator,
                                                                                 simulatorLogger: simulatorLogger)))
            narrator.say("done: " + outcomes.joined(separator: ", "))
            guard outcomes.allSatisfy({ $0.hasSuffix(" completed") || $0.hasSuffix(" received") }) else { throw ExitCode(1) }
        }
    }

    /// The notification backend: the desktop's list, then a push arriving live while we watch.
    private func notificationScene(context: CommandContext, narrator: Narrator, simulatorLogger: Logger) async throws -> String {
        let simulator = NotificationSimulator(options: .init(), logger: simulatorLogger)
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        narrator.say("notification relay and desktop simulator at \(url.absoluteString)")
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("tether-demo-\(UUID().uuidString)").path
        let backend = NotificationRelayBackend(
            configuration: .init(url: url.absoluteString, peerID: nil, desktop: nil, profile: "demo-notification",
                                 stateDirectory: state, timeout: .seconds(10)),
            logger: context.logger)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let printer = context.makePrinter(profile: "demo-notification", backend: .notification)
        narrator.say("tether -p demo-notification notifications list --unread")
        for notification in try await backend.listNotifications(unreadOnly: true, limit: nil, offset: nil) {
            printer.print(.notificationReceived(notification))
        }
        narrator.say("tether -p demo-notification notifications watch   (the desktop pushes one, twice: it shows once)")
        var outcome = "missing"
        let watcher = Task { () async throws -> Event? in
            for try await event in backend.watch() where event.type == .notificationReceived {
                return event
            }
            return nil
        }
        // Wait for the watch's own registration (its stable id; one-shot sessions use `stable~suffix`).
        func watching() -> Bool {
            simulator.peers().contains { $0.peerID != simulator.desktopPeerID && $0.deviceType != "desktop" && !$0.peerID.contains("~") }
        }
        for _ in 0..<100 where !watching() { try await Task.sleep(for: .milliseconds(50)) }
        try simulator.push(title: "Turn finished", body: "The build directory has been removed.", twice: true)
        let received = try await withThrowingTaskGroup(of: Event?.self) { group in
            group.addTask { try await watcher.value }
            group.addTask { try await Task.sleep(for: .seconds(10)); watcher.cancel(); return nil }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let received {
            printer.print(received)
            outcome = "received"
        }
        printer.finish()
        return outcome
    }

    /// Streams a turn to its end and answers each approval the way a user would, from a second
    /// "process" (the backend's own `approve`, as `tether approve ID` calls it).
    private func followAnswering(_ backend: any Backend, _ request: SendRequest, printer: EventPrinter, narrator: Narrator,
                                 decision: Decision) async throws -> String {
        var outcome = "incomplete"
        for try await event in backend.sendAndFollow(request) {
            if event.type == .connectionState { continue }
            printer.print(event)
            if event.type == .approvalRequested, let id = event.data["id"]?.string {
                narrator.say("answering as a user would: tether approve '\(id)' --decision \(decision.rawValue)")
                Task {
                    try? await Task.sleep(for: .milliseconds(300))
                    _ = try? await backend.approve(id: id, answer: ApprovalAnswer(decision: decision))
                }
            }
            if event.type == .turnCompleted { outcome = event.data["status"]?.string ?? outcome }
        }
        return outcome
    }
}

/// One backend's part of the demo: how to start its simulator and adapter, and what to ask.
struct DemoScene {
    let profile: String
    let backend: BackendKind
    let prompt: String
    let start: () async throws -> (description: String, backend: any Backend, stop: () async -> Void)
}

/// The demo's commentary, on stderr so stdout stays data.
struct Narrator {
    let style: Style
    func say(_ text: String) { LineOutput.standardError.write(style.dim("demo: \(text)") + "\n") }
}
