import ArgumentParser
import TetherAdapterSupport
import TetherConfig
import TetherCore
import TetherNet
import TetherStreaming

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Connect, authenticate, read health, version and capabilities. Exit 0 iff the profile is usable.")
    @OptionGroup var options: GlobalOptions

    /// A failure's hint said "`tether check` tests the profile" — to someone running it. Here
    /// it says what to look at instead.
    static func advice(for error: any Error, profile: Profile, configPath: String?) -> any Error {
        let tether: TetherError
        switch error {
        case let error as TetherError: tether = error
        case let error as NetError: tether = error.tetherError(service: "the server")
        default: return error
        }
        guard let hint = tether.hint, hint.contains("tether check") else { return tether }
        let place = "profiles.\(profile.name)" + (configPath.map { " in \($0)" } ?? "")
        return TetherError(tether.code, tether.message,
                           hint: "is the \(profile.backend.rawValue) server running at \(profile.endpoint), and is that the address? (\(place))",
                           retryable: tether.retryable)
    }

    func run() async throws {
        try await reportingFailures {
            let context = CommandContext(options)
            let (profile, backend) = try await context.makeBackend()
            defer { OpenTunnels.closeAll() }
            let report: CheckReport
            do {
                report = try await backend.check()
            } catch {
                throw Self.advice(for: error, profile: profile, configPath: (try? context.loadConfig())?.path)
            }
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
