import ArgumentParser
import Foundation
import Logging
import TetherCodexMonitor
import TetherCodexWorker
import TetherCore
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

    @OptionGroup var options: GlobalOptions
    @Option(help: ArgumentHelp("Pause between scripted events, in milliseconds.", valueName: "ms")) var pacing: Int = 40

    func run() async throws {
        try await reportingFailures {
            let context = CommandContext(options)
            var simulatorLogger = context.logger
            // The simulators are scenery: their logs only with -v.
            simulatorLogger.logLevel = options.verbose > 0 ? context.logger.logLevel : .critical
            let narrator = Narrator(style: Style.forStream(.standardError, environment: context.environment.variables))

            // OpenCode: a prompt that asks to remove something makes the agent ask permission.
            let opencode = OpenCodeSimulator(options: .init(password: "demo-password", pacing: .milliseconds(pacing)),
                                             logger: simulatorLogger)
            let opencodeURL = try await opencode.start()
            narrator.say("OpenCode simulator at \(opencodeURL.absoluteString) (Basic auth on)")
            let opencodeBackend = OpenCodeBackend(
                configuration: .init(baseURL: opencodeURL.absoluteString, password: "demo-password", directory: nil, profile: "demo-opencode"),
                logger: context.logger)
            let printer = context.makePrinter(profile: "demo-opencode", backend: .opencode)
            let session = try await opencodeBackend.createSession(SessionCreateRequest(title: "Tether demo"))
            printer.print(.session(.sessionCreated, session))
            narrator.say("tether send \(session.id) \"Clean the build dir and say done\" --follow")
            let opencodeOutcome = try await followAnswering(opencodeBackend, SendRequest(session: session.id, text: "Clean the build dir and say done"),
                                                            printer: printer, narrator: narrator, decision: .accept)
            printer.finish()
            await opencode.stop()

            // Codex Worker: a thread, a job, a command approval.
            let worker = CodexWorkerSimulator(options: .init(token: "demo-token", pacing: .milliseconds(pacing)), logger: simulatorLogger)
            let workerURL = try await worker.start()
            narrator.say("Codex Worker simulator at \(workerURL.absoluteString) (Bearer token on)")
            let workerBackend = CodexWorkerBackend(
                configuration: .init(baseURL: workerURL.absoluteString, token: "demo-token", profile: "demo-codex-worker"),
                logger: context.logger)
            let workerPrinter = context.makePrinter(profile: "demo-codex-worker", backend: .codexWorker)
            let thread = try await workerBackend.createSession(SessionCreateRequest(title: "Tether demo"))
            workerPrinter.print(.session(.sessionCreated, thread))
            narrator.say("tether send \(thread.id) \"run the tests and approve it\" --follow")
            let workerOutcome = try await followAnswering(workerBackend, SendRequest(session: thread.id, text: "run the tests and approve it"),
                                                          printer: workerPrinter, narrator: narrator, decision: .accept)
            workerPrinter.finish()
            await worker.stop()

            // CodexMonitor: a daemon over TCP, raw Codex app-server events, a command approval.
            let monitor = CodexMonitorSimulator(options: .init(token: "demo-token", pacing: .milliseconds(pacing)), logger: simulatorLogger)
            let bound = try await monitor.start()
            narrator.say("CodexMonitor daemon simulator at \(bound.host):\(bound.port) (token auth on)")
            let monitorBackend = CodexMonitorBackend(
                configuration: .init(host: bound.host, port: bound.port, token: "demo-token", workspace: "ws-1", profile: "demo-codexmonitor"),
                logger: context.logger)
            let monitorPrinter = context.makePrinter(profile: "demo-codexmonitor", backend: .codexmonitor)
            let monitorSession = try await monitorBackend.createSession(SessionCreateRequest(title: "Tether demo"))
            monitorPrinter.print(.session(.sessionCreated, monitorSession))
            narrator.say("tether send \(monitorSession.id) \"run the tests\" --follow")
            let monitorOutcome = try await followAnswering(monitorBackend, SendRequest(session: monitorSession.id, text: "run the tests"),
                                                           printer: monitorPrinter, narrator: narrator, decision: .accept)
            monitorPrinter.finish()
            await monitor.stop()

            narrator.say("done: OpenCode turn \(opencodeOutcome), Codex Worker turn \(workerOutcome), CodexMonitor turn \(monitorOutcome)")
            guard [opencodeOutcome, workerOutcome, monitorOutcome].allSatisfy({ $0 == "completed" }) else { throw ExitCode(1) }
        }
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

/// The demo's commentary, on stderr so stdout stays data.
struct Narrator {
    let style: Style
    func say(_ text: String) { LineOutput.standardError.write(style.dim("demo: \(text)") + "\n") }
}
