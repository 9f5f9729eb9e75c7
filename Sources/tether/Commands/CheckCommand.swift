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
                let mark = report.reachable ? style.green("✓") : style.red("✗")
                LineOutput.standardOutput.write("""
                    \(mark) \(profile.name): \(backend.kind.rawValue) at \(report.endpoint)\(report.version.map { " (version \($0))" } ?? "")
                      authenticated: \(report.authenticated ? "yes" : "no auth required")
                      can: \(backend.capabilities.names.joined(separator: ", "))

                    """)
            }
            // Reached, but not usable (a desktop offline, a worker whose health is not ok): say
            // what, on stderr, as every other failure is said.
            if !report.reachable {
                throw TetherError(.unavailable, "\(profile.name) (\(backend.kind.rawValue) at \(report.endpoint)) answered but is not usable: "
                                      + (report.details["problem"]?.string ?? "it did not report itself healthy"))
            }
        }
    }
}
