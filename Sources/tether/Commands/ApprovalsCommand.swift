import ArgumentParser
import TetherCore

struct ApprovalsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approvals", abstract: "Pending approvals, as approval.requested events.")
    @OptionGroup var options: GlobalOptions
    @Option(help: "Only this session.") var session: String?

    func run() async throws {
        try await reportingFailures {
            try await CommandContext(options).withBackend(requiring: .approvals, command: "approvals") { _, backend, printer in
                var session = session
                if let typed = session { session = try await backend.resolveSession(typed) }
                let approvals = try await backend.pendingApprovals(session: session)
                for approval in approvals { printer.print(.approvalRequested(approval)) }
                if approvals.isEmpty, CommandContext(options).format == .text {
                    LineOutput.standardError.write("no pending approvals\n")
                }
            }
        }
    }
}

struct ApproveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve", abstract: "Answer an approval by its id.",
        discussion: """
            Decisions: accept, accept_for_session, accept_with_amendment (commands only, with \
            --amendment ARGV...), decline, cancel. A decision the backend cannot express is refused \
            with a clear error (exit 64).

            The id may be shortened to any start that matches one pending approval, or be `last` \
            for the newest pending one: `tether approve last`.

            A question (kind question) is answered with its choices: `--answer build` (a choice's \
            label or number, or text of your own where the question takes it); `--answer 2=dist` \
            or `--answer HEADER=dist` for a later question; repeat for several. `--decision \
            decline` dismisses it.
            """)
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The approval's id as approval.requested printed it, enough of its start to pick one pending approval, or `last` for the newest pending.")
    var id: String
    @Option(help: ArgumentHelp("The decision.", valueName: "decision")) var decision: String = "accept"
    @Option(parsing: .upToNextOption, help: "With accept_with_amendment: the command prefix to allow from now on.")
    var amendment: [String] = []
    @Option(help: ArgumentHelp("A question's answer: CHOICE, N=CHOICE or HEADER=CHOICE (repeatable).", valueName: "answer"))
    var answer: [String] = []

    func validate() throws {
        guard let parsed = Decision(rawValue: decision) else {
            throw ValidationError("unknown decision \"\(decision)\"; use one of: \(Decision.names)")
        }
        if parsed == .acceptWithAmendment, amendment.isEmpty {
            throw ValidationError("accept_with_amendment needs --amendment ARGV... (e.g. --amendment npm test)")
        }
        if parsed != .acceptWithAmendment, !amendment.isEmpty {
            throw ValidationError("--amendment goes with --decision accept_with_amendment")
        }
        if parsed != .accept, !answer.isEmpty {
            throw ValidationError("--answer answers a question (the default --decision accept); --decision \(decision) goes without it")
        }
    }

    func run() async throws {
        try await reportingFailures {
            try await CommandContext(options).withBackend(requiring: .approvals, command: "approve") { _, backend, printer in
                let (id, pending) = try await backend.resolveApproval(id)
                var reply = ApprovalAnswer(decision: Decision(rawValue: decision)!, amendment: amendment)
                if let pending, pending.kind == .question {
                    if let form = QuestionForm(pending.extra["questions"]), !answer.isEmpty {
                        reply.answers = try form.answers(from: answer)
                    }
                } else if !answer.isEmpty {
                    throw TetherError(.usage, "--answer answers a question, and approval \(id) is \(pending.map { "a \($0.kind.rawValue) request" } ?? "not a pending question")",
                                      hint: "answer it with --decision (one of: \(pending.map { $0.options.map(\.rawValue).joined(separator: ", ") } ?? Decision.names))")
                }
                printer.print(try await backend.approve(id: id, answer: reply))
            }
        }
    }
}

struct AbortCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "abort", abstract: "Stop a session's running turn.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The session's id, or enough of its start to pick one.") var session: String
    @Option(help: "The turn, where the backend needs it.") var turn: String?

    func run() async throws {
        try await reportingFailures {
            try await CommandContext(options).withBackend(requiring: .abort, command: "abort") { _, backend, _ in
                let session = try await backend.resolveSession(session)
                try await backend.abort(session: session, turn: turn)
                LineOutput.standardError.write("abort requested for \(session)\n")
            }
        }
    }
}
