import ArgumentParser
import TetherCore

struct TunnelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel",
        abstract: "Hold the profile's SSH tunnel open and print the local endpoint.",
        discussion: "Prints {\"local\": \"127.0.0.1:PORT\", \"remote\": \"host:port\", \"via\": \"user@ssh-host:22\"} on the first line.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await reportingFailures {
            let (config, profile) = try CommandContext(options).selectProfile()
            guard let name = profile.tunnel, config.tunnel(for: profile) != nil else {
                throw TetherError(.usage, "profile \(profile.name) has no tunnel",
                                  hint: "add tunnel = \"NAME\" to [profiles.\(profile.name)] and a [tunnels.NAME] table")
            }
            throw TetherError(.unsupported, "SSH tunnels (tunnel \"\(name)\") are not in this build yet",
                              hint: "until then: ssh -N -L PORT:\(profile.endpoint) …, and a profile pointing at 127.0.0.1:PORT")
        }
    }
}
