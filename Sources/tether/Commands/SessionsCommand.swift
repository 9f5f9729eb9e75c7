import ArgumentParser
import TetherCore

struct SessionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions", abstract: "List, create or show sessions (threads).",
        subcommands: [List.self, Create.self, Show.self, Archive.self, Unarchive.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The backend's sessions, newest first.")
        @OptionGroup var options: GlobalOptions
        @Flag(help: "Include archived sessions (where the backend archives).") var archived = false

        func run() async throws {
            try await reportingFailures {
                try await CommandContext(options).withBackend(requiring: .sessions, command: "sessions list") { _, backend, printer in
                    let sessions = try await backend.listSessions(SessionListRequest(includeArchived: archived))
                    printSessions(await sessions.markingWaiting(backend), printer: printer, format: CommandContext(options).format)
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start a new session.")
        @OptionGroup var options: GlobalOptions
        @Option(help: "A title for the session.") var title: String?
        @Option(help: "The project directory (where the backend supports one).") var directory: String?

        func run() async throws {
            try await reportingFailures {
                try await CommandContext(options).withBackend(requiring: .createSession, command: "sessions create") { _, backend, printer in
                    let session = try await backend.createSession(SessionCreateRequest(title: title, directory: directory))
                    printer.print(.session(.sessionCreated, session))
                }
            }
        }
    }

    struct Archive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Archive a session (hidden from `sessions list` without --archived).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The session's id, or enough of its start to pick one.") var id: String
        func run() async throws { try await SessionsCommand.setArchived(true, id: id, options: options) }
    }

    struct Unarchive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bring an archived session back.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The session's id, or enough of its start to pick one.") var id: String
        func run() async throws { try await SessionsCommand.setArchived(false, id: id, options: options) }
    }

    static func setArchived(_ archived: Bool, id: String, options: GlobalOptions) async throws {
        try await reportingFailures {
            let command = archived ? "sessions archive" : "sessions unarchive"
            try await CommandContext(options).withBackend(requiring: .archive, command: command) { _, backend, printer in
                printer.print(.session(.sessionUpdated, try await backend.setArchived(archived, session: try await backend.resolveSession(id))))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One session.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The session's id, or enough of its start to pick one.") var id: String

        func run() async throws {
            try await reportingFailures {
                try await CommandContext(options).withBackend(requiring: .sessions, command: "sessions show") { _, backend, printer in
                    printSessions([try await backend.session(id: try await backend.resolveSession(id))], printer: printer, format: CommandContext(options).format)
                }
            }
        }
    }
}

extension [Session] {
    /// A busy session whose turn waits for an approval is `waiting_approval`: backends that
    /// report such a session as busy (OpenCode's `/session/status`) showed `[busy]` while it
    /// waited for the person reading the list. Where approvals cannot be listed, as they were.
    func markingWaiting(_ backend: any Backend) async -> [Session] {
        guard backend.capabilities.contains(.approvals), contains(where: { $0.status == .busy }),
              let pending = try? await backend.pendingApprovals(session: nil), !pending.isEmpty else { return self }
        let waiting = Set(pending.compactMap(\.session))
        return map { session in
            var session = session
            if session.status == .busy, waiting.contains(session.id) { session.status = .waitingApproval }
            return session
        }
    }
}

/// What a session's status reads as in the readable view.
func statusText(_ status: SessionStatus) -> String {
    status == .waitingApproval ? "waiting for you" : status.rawValue
}

/// Sessions as `session.updated` lines (JSONL), or a table (text).
func printSessions(_ sessions: [Session], printer: EventPrinter, format: OutputFormat) {
    switch format {
    case .jsonl:
        for session in sessions { printer.print(.session(.sessionUpdated, session)) }
    case .text:
        for session in sessions {
            let status = session.status.map { " [\(statusText($0))]" } ?? ""
            let title = session.title ?? "(untitled)"
            LineOutput.standardOutput.write("\(session.id)  \(title)\(status)\(session.directory.map { "  \($0)" } ?? "")\n")
        }
        if sessions.isEmpty { LineOutput.standardError.write("no sessions\n") }
    }
}
