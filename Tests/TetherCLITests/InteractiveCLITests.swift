import Foundation
import Logging
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// `send --follow` as a person at a terminal uses it, on a pseudo-terminal: an approval answered
/// by one key where it appears, Enter leaving it pending, Ctrl-C saying what still runs and how
/// to stop it, and no prompt at all when stdin is not a terminal.
@Suite(.serialized) struct InteractiveCLITests {
    let env = ["OC_PW": "secret"]

    /// The text after `label` on the last line of `shown` that has it.
    func printed(after label: String, in shown: String) -> String? {
        guard let line = shown.split(separator: "\n").last(where: { $0.contains(label) }),
              let range = line.range(of: label) else { return nil }
        return String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces)
    }

    @Test func anApprovalIsAnsweredByOneKey() async throws {
        try await withSimulatedOpenCode { global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let run = try await PseudoTerminal.run(["send", session, OpenCodeCLITests.prompt, "--follow"] + global,
                                                   steps: ["expect:answer now?", "send:a"], environment: env)
            #expect(run.completed, "\(run.shown)")
            #expect(run.status == 0, "\(run.shown)")
            #expect(run.shown.contains("[a] accept") && run.shown.contains("[d] decline"), "\(run.shown)")
            #expect(run.shown.contains("→ accept"), "\(run.shown)")
            #expect(run.shown.contains("completed"), "\(run.shown)")
        }
    }

    /// Enter leaves it pending and prints the command that answers it later; run as printed
    /// (from elsewhere), it answers, and the turn goes on to the end.
    @Test func enterLeavesItPendingWithTheCommandForLater() async throws {
        try await withSimulatedOpenCode { global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let terminal = try PseudoTerminal(["send", session, OpenCodeCLITests.prompt, "--follow"] + global,
                                              steps: ["expect:answer now?", "send:\\r"], environment: env)
            try await terminal.waitFor("answer later: ")
            let later = try #require(printed(after: "answer later: ", in: terminal.shown))
            #expect(later.contains("--decision accept"), "\(later)")
            let answered = try await TetherProcess.runPrinted(later, environment: env)
            #expect(answered.status == 0, "\(later): \(answered.stderr)")
            let run = try await terminal.finish()
            #expect(run.status == 0, "\(run.shown)")
            #expect(run.shown.contains("left pending"), "\(run.shown)")
        }
    }

    /// stdout on a terminal but stdin not (a script feeding it): nothing is asked, nothing waits
    /// for a key; the approval is shown with its command, answered from elsewhere.
    @Test func nothingIsAskedWhenStdinIsNotATerminal() async throws {
        try await withSimulatedOpenCode { global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let line = ([TetherProcess.binary.path, "send", session, OpenCodeCLITests.prompt, "--follow"] + global)
                .map { "'\($0)'" }.joined(separator: " ") + " < /dev/null"
            let terminal = try PseudoTerminal([], steps: ["expect:answer: "], environment: env, command: ["/bin/sh", "-c", line])
            try await terminal.waitFor("answer: ")
            let answer = try #require(printed(after: "answer: ", in: terminal.shown))
            #expect(try await TetherProcess.runPrinted(answer, environment: env).status == 0)
            let run = try await terminal.finish()
            #expect(run.status == 0, "\(run.shown)")
            #expect(!run.shown.contains("answer now?"), "\(run.shown)")
        }
    }

    /// The terminal is given back as it was (echo, line editing) however the prompt ends: a key,
    /// or Ctrl-C while it waits. `stty -a` runs on the same terminal after tether.
    @Test(arguments: ["a", "\\x03"])
    func theTerminalIsGivenBack(key: String) async throws {
        try await withSimulatedOpenCode { global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let command = ([TetherProcess.binary.path, "send", session, OpenCodeCLITests.prompt, "--follow"] + global)
                .map { "'\($0)'" }.joined(separator: " ")
            // A trapped INT is default again in tether; the shell runs stty once tether is gone.
            let line = "trap 'echo; stty -a; exit 130' INT; \(command); echo; stty -a"
            let run = try await PseudoTerminal.run([], steps: ["expect:answer now?", "send:\(key)", "expect:speed"],
                                                   environment: env, command: ["/bin/sh", "-c", line])
            #expect(run.completed, "\(run.shown)")
            let settings = try #require(run.shown.range(of: "speed").map { String(run.shown[$0.lowerBound...]) }, "\(run.shown)")
            let flags = Set(settings.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == ";" }).map(String.init))
            #expect(flags.contains("icanon") && flags.contains("echo"), "\(settings)")
            #expect(!flags.contains("-icanon") && !flags.contains("-echo"), "\(settings)")
        }
    }

    /// A question's choices are shown numbered, and one key picks one.
    @Test func aQuestionIsAnsweredByItsNumber() async throws {
        try await withSimulatedOpenCode { global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let run = try await PseudoTerminal.run(["send", session, "ask me which directory to choose", "--follow"] + global,
                                                   steps: ["expect:answer now?", "send:2"], environment: env)
            #expect(run.status == 0, "\(run.shown)")
            #expect(run.shown.contains("1) build") && run.shown.contains("2) dist"), "\(run.shown)")
            #expect(run.shown.contains("→ answered"), "\(run.shown)")
        }
    }

    /// Ctrl-C while a Codex Worker job waits: the view stops (130) and says the job still runs,
    /// with the command that aborts it; run as printed, it does.
    @Test func ctrlCSaysWhatStillRunsAndTheAbortWorks() async throws {
        let simulator = CodexWorkerSimulator(options: .init(token: "t0ken"), logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() })
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            default_profile = "elsewhere"
            [profiles.elsewhere]
            backend = "opencode"
            url = "http://127.0.0.1:9"
            [profiles.w]
            backend = "codex-worker"
            url = "\(url.absoluteString)"
            token = { env = "W_TOKEN" }
            """)
        let env = ["W_TOKEN": "t0ken"]
        let global = ["-p", "w", "--config", config.path]
        let thread = try await TetherProcess.createSession(global, environment: env)
        let run = try await PseudoTerminal.run(["send", thread, "run the build", "--follow"] + global,
                                               steps: ["expect:answer now?", "send:\\x03"],
                                               environment: env)
        #expect(run.status == 130, "\(run.shown)")
        #expect(run.shown.contains("still running on w"), "\(run.shown)")
        let abort = try #require(printed(after: "stop it:", in: run.shown), "\(run.shown)")
        #expect(abort.hasPrefix("tether -p w --config \(config.path) abort \(thread) --turn job_"), "\(abort)")
        let job = try #require(abort.components(separatedBy: "--turn ").last)

        // Still running until aborted.
        let before = try await TetherProcess.run(["events", "--turn", job] + global, environment: env)
        #expect(try before.events().contains { $0.type == .turnCompleted } == false, "\(before.stdout)")
        let aborted = try await TetherProcess.runPrinted(abort, environment: env)
        #expect(aborted.status == 0, "\(abort): \(aborted.stderr)")
        let after = try await TetherProcess.run(["events", "--turn", job] + global, environment: env)
        #expect(try after.events().last { $0.type == .turnCompleted }?.data["status"] == "cancelled", "\(after.stdout)")
    }
}
