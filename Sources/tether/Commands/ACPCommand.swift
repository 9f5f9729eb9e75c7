import ArgumentParser
import Foundation
import TetherACP
import TetherConfig
import TetherCore
import TetherNet

/// `tether acp`: the profile's backend as an Agent Client Protocol agent on stdio, for editors
/// (Zed, JetBrains, Neovim's CodeCompanion and avante, Emacs agent-shell) that start an agent as
/// a child process.
struct ACPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "acp",
        abstract: "Speak the Agent Client Protocol on stdio: an editor drives the profile's remote agent.",
        discussion: """
            Your editor starts this command and talks JSON-RPC to it on stdin/stdout (ACP version 1); \
            you do not run it by hand. It drives the profile's backend (Codex Worker, OpenCode or \
            CodexMonitor, through the profile's SSH tunnel when it has one). stdout carries protocol \
            only; logs go to stderr (-v for more).

            Zed (settings.json) or JetBrains (~/.jetbrains/acp.json):
              "agent_servers": {
                "Tether (home)": {"command": "tether", "args": ["acp", "-p", "home"]}
              }

            What the editor gets: session/new creates a session on the backend (in the profile's \
            `directory` / `workspace` when set, else in the editor's project path, a path on the \
            agent's machine); session/load replays a session's history; session/list lists the \
            profile's sessions; session/prompt streams the turn (text, reasoning, tool calls, plan, \
            usage); approvals become permission requests (allow once / allow for this session / \
            reject); session/cancel aborts the turn. An approval answered elsewhere (`tether approve`, \
            the gateway's page) withdraws the editor's request.

            Try it by hand against a simulator (`tether simulate opencode` prints the URL \
            to put in a profile, here "sim"):
              echo '{"jsonrpc":"2.0","id":1,"method":"initialize"}' | tether acp -p sim

            The process ends with exit 0 when stdin closes (the editor quits), once it has answered \
            the requests it read (it waits up to 2 s for them; one still running then gets an \
            error). Turns still running on the backend go on.
            """)

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        // The editor may close its end of stdout first: a write then must fail, not kill us.
        signal(SIGPIPE, SIG_IGN)
        try await reportingFailures {
            let context = CommandContext(options)
            // The agent runs for the editor's whole session: a stdio app-server lives as long.
            let (profile, backend) = try await context.makeBackend(longLived: true)
            defer { OpenTunnels.closeAll() }
            guard backend.capabilities.contains(.send) else {
                throw TetherError.unsupported("`tether acp`", backend: backend.kind,
                                              hint: "ACP drives an agent: use a profile whose backend is codex, codex-worker, opencode, codexmonitor or gateway")
            }
            let pins: Bool = switch profile.settings {
            case .openCode(let settings): settings.directory != nil
            case .codexMonitor(let settings): settings.workspace != nil
            case .codex(let settings): settings.directory != nil
            // A remote profile pins its directory on the gateway's side, if at all.
            case .codexWorker, .notification, .gateway: false
            }
            let agent = ACPAgent(
                configuration: .init(version: TetherVersion.string, profile: profile.name, profilePinsDirectory: pins,
                                     tether: context.invocation.tether),
                backend: backend, output: .fileDescriptor(STDOUT_FILENO), logger: context.logger)
            context.logger.info("tether acp serving profile \(profile.name) (\(backend.kind.rawValue)) on stdio")
            await agent.serve(StdinLines.stream(logger: context.logger))
        }
    }
}
