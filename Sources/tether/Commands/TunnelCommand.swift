import ArgumentParser
import Foundation
import TetherConfig
import TetherCore
import TetherSSH
import TetherStreaming

struct TunnelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel",
        abstract: "Hold the profile's SSH tunnel open and print the local endpoint.",
        discussion: """
            Prints {"local": "127.0.0.1:PORT", "remote": "host:port", "via": "user@ssh-host:22"} on the \
            first line, then holds the tunnel (re-establishing it when the link dies) until interrupted. \
            Other tools can then reach the backend at "local". Host keys are checked against known_hosts; \
            an unknown host is refused with its SHA256 fingerprint unless trust_on_first_use = true.
            """)
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await reportingFailures {
            let context = CommandContext(options)
            let (config, profile) = try context.selectProfile()
            guard let name = profile.tunnel, let tunnelConfig = config.tunnel(for: profile) else {
                throw TetherError(.usage, "profile \(profile.name) has no tunnel",
                                  hint: "add tunnel = \"NAME\" to [profiles.\(profile.name)] and a [tunnels.NAME] table")
            }
            let target = ProfileTunnel.target(of: profile.settings)
            let opened = try await ProfileTunnel.open(tunnelConfig, to: target, environment: context.environment, logger: context.logger)
            StatusLine.shared.clear()
            let line: JSONValue = [
                "local": .string("\(opened.local.host):\(opened.local.port)"), "remote": .string(target.description),
                "via": .string(opened.via), "tunnel": .string(name), "profile": .string(profile.name),
            ]
            LineOutput.standardOutput.write(line.serialized + "\n")
            LineOutput.standardError.write("tether tunnel: \(opened.local.host):\(opened.local.port) → \(target) via \(opened.via); Ctrl-C closes it\n")
            // Until interrupted (which stops the tunnel), or until the tunnel gives up by itself
            // (a changed host key, refused authentication while re-establishing).
            let tunnel = opened.tunnel
            Task.detached {
                await waitForInterrupt()
                tunnel.stop()
            }
            do {
                try await tunnel.waitUntilStopped()
            } catch let error as SSHError {
                throw ProfileTunnel.tetherError(error, tunnel: name)
            }
        }
    }
}
