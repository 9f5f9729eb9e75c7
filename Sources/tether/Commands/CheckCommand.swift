import ArgumentParser
import TetherCore

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Connect, authenticate, read health, version and capabilities. Exit 0 iff the profile is usable.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await reportingFailures {
            let context = CommandContext(options)
            let (profile, backend) = try await context.makeBackend()
            defer { OpenTunnels.closeAll() }
            let report = try await backend.check()
            StatusLine.shared.clear()
            var object = JSONObject.compact([
                "profile": .string(profile.name), "backend": .string(backend.kind.rawValue),
                "endpoint": .string(report.endpoint), "reachable": .bool(report.reachable),
                "authenticated": .bool(report.authenticated), "version": JSONValue(report.version),
            ])
            object["capabilities"] = JSONValue(backend.capabilities.names)
            for entry in report.details { object[entry.key] = entry.value }
            switch context.format {
            case .jsonl: LineOutput.standardOutput.write(JSONValue.object(object).serialized + "\n")
            case .text:
                let style = Style.forStream(.standardOutput, environment: context.environment.variables)
                LineOutput.standardOutput.write("""
                    \(style.green("✓")) \(profile.name): \(backend.kind.rawValue) at \(report.endpoint)\(report.version.map { " (version \($0))" } ?? "")
                      authenticated: \(report.authenticated ? "yes" : "no auth required")
                      can: \(backend.capabilities.names.joined(separator: ", "))

                    """)
            }
            if !report.reachable { throw ExitCode(69) }
        }
    }
}
