import ArgumentParser
import Foundation
import TetherNet

@main
struct Tether: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether",
        abstract: "Watch, drive and approve remote AI coding agents (Codex, OpenCode) from one CLI.",
        discussion: """
            Tether speaks each backend's own protocol and shows one normalized stream: sessions, \
            turns, parts, approvals and notifications. Streams are JSON Lines on stdout when it is \
            not a terminal (`tether events --follow | jq`), a readable view when it is. Logs go to stderr.

            A profile (in ~/.config/tether/config.toml; see config/tether.example.toml) picks the \
            backend and how to reach it. Try it without any backend: `tether demo`.

            Exit codes: 0 ok, 1 the operation failed, 64 usage, 65 bad data from the backend, \
            69 backend unavailable, 77 authentication refused, 78 configuration error, 130 interrupted.
            """,
        version: TetherVersion.string,
        subcommands: [
            ProfilesCommand.self, CheckCommand.self, SessionsCommand.self, HistoryCommand.self, SendCommand.self,
            EventsCommand.self, ApprovalsCommand.self, ApproveCommand.self, AbortCommand.self,
            NotificationsCommand.self, TunnelCommand.self, SSECommand.self, SimulateCommand.self, DemoCommand.self,
            ACPCommand.self,
            ServeCommand.self, PairCommand.self,
        ]
    )

    /// Declared here too so the global options may come before the command, as in
    /// `tether -p home events --follow`; each command reads them through its own group.
    @OptionGroup var options: GlobalOptions

    /// Before anything touches OpenSSL (a tunnel's libssh2 comes before libcurl): network
    /// threads may still be ending when a command returns, so OpenSSL must not clean up at exit.
    static func main() async {
        // Whatever Tether writes (the gateway's log, cursors, the offline queue, pins) holds
        // prompts, transcripts or keys: created for the owner alone, whatever the shell's umask.
        umask(0o077)
        OpenSSLExitCleanup.disable()
        if let problem = CommandSuggestion.problem(in: Array(CommandLine.arguments.dropFirst())) {
            LineOutput.standardError.write("tether: \(problem)\n")
            Foundation.exit(64)
        }
        await main(nil)
    }
}
