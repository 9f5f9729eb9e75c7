import ArgumentParser
import TetherCore

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Start a turn in a session; with --follow, stream it to the end.",
        discussion: """
            With --follow the exit code is the turn's outcome: 0 completed, 1 failed or cancelled.

            On a terminal (stdin and stdout), an approval is asked where it appears: one key per \
            option ([a] accept, [s] accept for session, [d] decline, [c] cancel; a question's \
            choices by number), Enter leaves it pending. Ctrl-C stops following, not the turn: \
            it prints the command that aborts the turn and the one that follows it again (exit 130).

            The session may be given by any start of its id that matches one session.
            """)
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The session's id, or enough of its start to pick one.") var session: String
    @Argument(help: "What to tell the agent.") var text: String
    @Option(help: "The model, as provider/model (OpenCode) or the backend's model id.") var model: String?
    @Flag(help: "Stream the turn's events until it completes.") var follow = false

    func run() async throws {
        try await reportingFailures {
            let context = CommandContext(options)
            try await context.withBackend(requiring: .send, command: "send") { profile, backend, printer in
                let session = try await backend.resolveSession(session)
                let request = SendRequest(session: session, text: text, model: model, raw: options.raw)
                guard follow else {
                    let receipt = try await backend.send(request)
                    var data = receipt.data
                    data["accepted"] = true
                    printer.print(Event(.turnStarted, session: receipt.session, turn: receipt.turn, data: data))
                    return
                }
                // Asked in place only where a person answers: a terminal on both ends, the readable view.
                let prompt = context.format == .text && TerminalKeys.interactive
                    ? ApprovalPrompt(backend: backend, invocation: context.invocation,
                                     style: Style.forStream(.standardOutput, environment: context.environment.variables))
                    : nil
                let answersQuestions = backend.capabilities.contains(.questions)
                let interruption = FollowInterruption(session: session, profile: profile.name, invocation: context.invocation,
                                                      cleanup: { prompt?.keys.stop() })
                let handler = interruption.install()
                defer {
                    prompt?.stop()
                    FollowInterruption.uninstall(handler)
                }
                var outcome: String?
                for try await batch in backend.sendAndFollow(request).batches {
                    // Noted before anything is shown: a Ctrl-C at what it shows names the turn.
                    if let started = batch.last(where: { $0.type == .turnStarted }), let turn = started.turn {
                        interruption.noteTurn(turn)
                    }
                    printer.print(contentsOf: batch)
                    if let prompt {
                        for event in batch {
                            if event.type == .approvalRequested { prompt.offer(event, answersQuestions: answersQuestions) }
                            if event.type == .approvalResolved, let id = event.data["id"]?.string { prompt.resolved(id) }
                        }
                    }
                    if let done = batch.last(where: { $0.type == .turnCompleted }) {
                        outcome = done.data["status"]?.string
                        interruption.noteFinished()
                    }
                }
                guard let outcome else {
                    throw TetherError(.unavailable, "the stream ended before the turn completed",
                                      hint: "follow it with `tether events --session \(session) --follow`")
                }
                if outcome != TurnOutcome.completed.rawValue {
                    printer.finish()
                    throw ExitCode(1)
                }
            }
        }
    }
}
