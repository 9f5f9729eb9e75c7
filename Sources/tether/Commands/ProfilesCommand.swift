import ArgumentParser
import Foundation
import TetherConfig
import TetherCore

struct ProfilesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profiles",
        abstract: "List the configured profiles, or show one (secrets redacted).",
        subcommands: [List.self, Show.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One line a profile: name, backend, endpoint, tunnel.")
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await reportingFailures {
                let context = CommandContext(options)
                let config = try context.loadConfig()
                let summaries = config.profileSummaries
                switch context.format {
                case .jsonl:
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    for summary in summaries {
                        LineOutput.standardOutput.write(Array(try encoder.encode(summary)) + [0x0A])
                    }
                case .text:
                    let style = Style.forStream(.standardOutput, environment: context.environment.variables)
                    LineOutput.standardOutput.write(style.dim("# \(config.path)") + "\n")
                    let width = summaries.map(\.name.count).max() ?? 0
                    for summary in summaries {
                        let name = summary.name.padding(toLength: width, withPad: " ", startingAt: 0)
                        let marker = summary.isDefault ? "*" : " "
                        let tunnel = summary.tunnel.map { " via \($0)" } ?? ""
                        LineOutput.standardOutput.write("\(marker) \(style.bold(name))  \(summary.backend.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)) \(summary.endpoint)\(tunnel)\n")
                    }
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One profile in full, with its tunnel; secrets shown as references or ••••••.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The profile's name.") var name: String

        func run() async throws {
            try await reportingFailures {
                let context = CommandContext(options)
                let config = try context.loadConfig()
                let profile = try config.redactedProfile(named: name)
                switch context.format {
                case .jsonl:
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    LineOutput.standardOutput.write(Array(try encoder.encode(profile)) + [0x0A])
                case .text:
                    LineOutput.standardOutput.write(profile.toml + (profile.toml.hasSuffix("\n") ? "" : "\n"))
                }
            }
        }
    }
}
