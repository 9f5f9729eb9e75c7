import ArgumentParser
import TetherCore

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Start a turn in a session; with --follow, stream it to the end.",
        discussion: "With --follow the exit code is the turn's outcome: 0 completed, 1 failed or cancelled.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The session's id, or enough of its start to pick one.") var session: String
    @Argument(help: "What to tell the agent.") var text: String
    @Option(help: "The model, as provider/model (OpenCode) or the backend's model id.") var model: String?
    @Flag(help: "Stream the turn's events until it completes.") var follow = false

    func run() async throws {
        try await reportingFailures {
            try await CommandContext(options).withBackend(requiring: .send, command: "send") { _, backend, printer in
                let session = try await backend.resolveSession(session)
                let request = SendRequest(session: session, text: text, model: model, raw: options.raw)
                guard follow else {
                    let receipt = try await backend.send(request)
                    var data = receipt.data
                    data["accepted"] = true
                    printer.print(Event(.turnStarted, session: receipt.session, turn: receipt.turn, data: data))
                    return
                }
                var outcome: String?
                for try await batch in backend.sendAndFollow(request).batches {
                    printer.print(contentsOf: batch)
                    if let done = batch.last(where: { $0.type == .turnCompleted }) { outcome = done.data["status"]?.string }
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
