import ArgumentParser
import TetherCore

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "A session's past turns, as normalized events.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The session's id, or enough of its start to pick one.") var session: String
    @Option(help: "At most this many of the most recent turns.") var limit: Int?

    func validate() throws {
        if let limit, limit <= 0 { throw ValidationError("--limit must be a positive number") }
    }

    func run() async throws {
        try await reportingFailures {
            try await CommandContext(options).withBackend(requiring: .history, command: "history") { _, backend, printer in
                for event in try await backend.history(session: try await backend.resolveSession(session), limit: limit) { printer.print(event) }
            }
        }
    }
}
