import ArgumentParser
import TetherCore

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "The normalized event stream (JSON Lines when piped).",
        discussion: """
            Without --follow, prints what is current (statuses, pending approvals, a replay from \
            --since where the backend keeps one) and exits. With --follow, keeps streaming and \
            reconnects on its own; nothing is lost or repeated across a reconnect where the backend \
            allows it, and a loss that cannot be avoided is reported as an `error` event.
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "Only this session.") var session: String?
    @Option(help: "Only this turn.") var turn: String?
    @Option(help: ArgumentHelp("Resume after this cursor (an event's \"cursor\").", valueName: "cursor")) var since: String?
    @Flag(help: "Keep streaming.") var follow = false

    func run() async throws {
        try await reportingFailures {
            try await CommandContext(options).withBackend(requiring: .events, command: "events") { _, backend, printer in
                if since != nil, !backend.capabilities.contains(.resume) {
                    throw TetherError.unsupported("--since (resuming from a cursor)", backend: backend.kind,
                                                  hint: "this backend keeps no replay; use --follow to stream from now on")
                }
                var session = session
                if let typed = session { session = try await backend.resolveSession(typed) }
                let request = EventsRequest(session: session, turn: turn, since: since, follow: follow, raw: options.raw)
                try await printer.print(backend.events(request))
            }
        }
    }
}
