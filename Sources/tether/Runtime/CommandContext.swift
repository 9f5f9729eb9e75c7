import Foundation
import Logging
import TetherConfig
import TetherCore
import TetherCodexMonitor
import TetherCodexWorker
import TetherOpenCode

/// What a command needs once the global options are read: the profile, a logger, a printer and
/// the backend. Built lazily so that `profiles` and `simulate` never touch a backend.
struct CommandContext {
    let options: GlobalOptions
    let logger: Logger
    let environment: ConfigEnvironment

    init(_ options: GlobalOptions) {
        self.options = options
        logger = LogSetup.logger(verbosity: options.verbose)
        environment = .current()
    }

    var format: OutputFormat { OutputFormat.resolve(options.output) }

    func loadConfig() throws -> ConfigFile {
        try ConfigFile.load(override: options.config, environment: environment)
    }

    func selectProfile() throws -> (ConfigFile, Profile) {
        let config = try loadConfig()
        return (config, try config.profile(named: options.profile))
    }

    func makePrinter(profile: String?, backend: TetherCore.BackendKind?) -> EventPrinter {
        EventPrinter(format: format, includeRaw: options.raw, profile: profile, backend: backend,
                     style: Style.forStream(.standardOutput, environment: environment.variables))
    }

    /// The profile's backend, ready to use. Secrets are resolved here, for this profile only.
    func makeBackend() throws -> (Profile, any Backend) {
        let (config, profile) = try selectProfile()
        if let tunnel = profile.tunnel {
            _ = config.tunnel(for: profile)
            throw TetherError(.unsupported, "profile \(profile.name) uses tunnel \"\(tunnel)\", and SSH tunnels are not in this build yet",
                              hint: "open the tunnel by hand (ssh -N -L PORT:HOST:PORT …) and point a profile without `tunnel` at 127.0.0.1:PORT")
        }
        StatusLine.shared.show("connecting to \(profile.name) (\(profile.backend.rawValue) at \(profile.endpoint))…")
        switch profile.settings {
        case .openCode(let settings):
            let password = try settings.password?.resolve(environment)
            let backend = OpenCodeBackend(
                configuration: .init(baseURL: settings.url.absoluteString, username: settings.username,
                                      password: password, directory: settings.directory, profile: profile.name),
                logger: logger)
            return (profile, backend)
        case .codexWorker(let settings):
            let token = try settings.token?.resolve(environment)
            return (profile, CodexWorkerBackend(
                configuration: .init(baseURL: settings.url.absoluteString, token: token, profile: profile.name), logger: logger))
        case .codexMonitor(let settings):
            let token = try settings.token?.resolve(environment)
            return (profile, CodexMonitorBackend(
                configuration: .init(host: settings.address.host, port: settings.address.port, token: token,
                                     workspace: settings.workspace, profile: profile.name),
                logger: logger))
        case .notification:
            throw TetherError(.unsupported, "the \(profile.backend.rawValue) backend (profile \(profile.name)) is not in this build yet",
                              hint: "profiles with backend = \"opencode\" work today; see `tether profiles list`")
        }
    }

    /// Runs `body` with the backend after checking it can do what the command needs.
    func withBackend(requiring capability: BackendCapabilities, command: String,
                     _ body: (Profile, any Backend, EventPrinter) async throws -> Void) async throws {
        let (profile, backend) = try makeBackend()
        guard backend.capabilities.contains(capability) else {
            throw TetherError.unsupported("`tether \(command)`", backend: backend.kind)
        }
        let printer = makePrinter(profile: profile.name, backend: backend.kind)
        defer { printer.finish() }
        try await body(profile, backend, printer)
        StatusLine.shared.clear()
    }
}
