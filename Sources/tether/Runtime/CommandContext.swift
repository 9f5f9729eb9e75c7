import Foundation
import Logging
import TetherConfig
import TetherCore
import TetherNet
import TetherCodexMonitor
import TetherCodexAppServer
import TetherCodexWorker
import TetherGatewayClient
import TetherNotification
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
        let profile = try config.profile(named: options.profile)
        Invocation.current = Invocation(options: options, config: config, profile: profile.name, environment: environment)
        return (config, profile)
    }

    /// How a command printed for the user must start to act where this one did (`Invocation`).
    var invocation: Invocation { Invocation.current }

    func makePrinter(profile: String?, backend: BackendKind?, capabilities: BackendCapabilities = []) -> EventPrinter {
        EventPrinter(format: format, includeRaw: options.raw, profile: profile, backend: backend, invocation: invocation,
                     answersQuestions: capabilities.contains(.questions),
                     style: Style.forStream(.standardOutput, environment: environment.variables),
                     noteStyle: Style.forStream(.standardError, environment: environment.variables))
    }

    /// The profile's backend, ready to use: its tunnel open if it has one, its secrets resolved
    /// (for this profile only).
    func makeBackend(longLived: Bool = false) async throws -> (Profile, any Backend) {
        let (config, profile) = try selectProfile()
        return (profile, try await makeBackend(for: profile, in: config, longLived: longLived))
    }

    /// `profile`'s backend (of `config`), its tunnel open if it has one, its secrets resolved.
    /// `longLived`: the backend serves for good (`tether serve`), not for one command.
    func makeBackend(for profile: Profile, in config: ConfigFile, longLived: Bool = false) async throws -> any Backend {
        var tunnel: ProfileTunnel?
        if let name = profile.tunnel {
            guard let tunnelConfig = config.tunnel(for: profile) else {
                throw TetherError(.configuration, "profile \(profile.name) names tunnel \"\(name)\", which \(config.path) does not define",
                                  hint: "add a [tunnels.\(name)] table")
            }
            let opened = try await ProfileTunnel.open(tunnelConfig, to: ProfileTunnel.target(of: profile.settings), environment: environment, logger: logger)
            OpenTunnels.keep(opened.tunnel)
            tunnel = opened
        }
        StatusLine.shared.show("connecting to \(profile.name) (\(profile.backend.rawValue) at \(profile.endpoint)\(tunnel.map { " via \($0.via)" } ?? ""))…")
        func url(_ url: URL) throws -> String { try (tunnel?.rewrite(url) ?? url).absoluteString }
        let tuning = profile.connection
        let reconnect = tuning.reconnectDelay.map(ReconnectPolicy.Configuration.startingAt) ?? .init()
        switch profile.settings {
        case .openCode(let settings):
            let password = try settings.password?.resolve(environment)
            var configuration = OpenCodeBackend.Configuration(
                baseURL: try url(settings.url), username: settings.username, password: password,
                directory: settings.directory, profile: profile.name, reconnect: reconnect)
            if let liveness = tuning.liveness { configuration.liveness = liveness }
            return OpenCodeBackend(configuration: configuration, logger: logger)
        case .codexWorker(let settings):
            let token = try settings.token?.resolve(environment)
            var configuration = CodexWorkerBackend.Configuration(baseURL: try url(settings.url), token: token,
                                                                 profile: profile.name, reconnect: reconnect)
            if let liveness = tuning.liveness { configuration.liveness = liveness }
            return CodexWorkerBackend(configuration: configuration, logger: logger)
        case .codexMonitor(let settings):
            let token = try settings.token?.resolve(environment)
            let address = tunnel.map { HostPort(host: $0.local.host, port: $0.local.port) } ?? settings.address
            var configuration = CodexMonitorBackend.Configuration(
                host: address.host, port: address.port, token: token, workspace: settings.workspace,
                profile: profile.name, reconnect: reconnect)
            if let liveness = tuning.liveness {
                // The daemon never heartbeats: after `liveness` of silence a ping must answer within it.
                configuration.keepalive = liveness
                configuration.pingTimeout = liveness
            }
            return CodexMonitorBackend(configuration: configuration, logger: logger)
        case .codex(let settings):
            let reach: CodexAppServerBackend.Configuration.Reach
            var label: String?
            switch (settings.reach, tunnel) {
            case (.webSocket(let wsURL), _): reach = .webSocket(url: try url(wsURL), token: try settings.token?.resolve(environment))
            case (.daemon(let socket), nil):
                reach = .daemon(socket: socket.map(environment.expandingTilde) ?? CodexHome.daemonSocket(environment: environment))
            case (.command(let arguments), nil): reach = .command(arguments)
            case (.daemon, let tunnel?):
                // The tunnel runs `codex app-server proxy` for each connection: WebSocket over its stdio.
                reach = .webSocket(url: "ws://\(tunnel.local.host):\(tunnel.local.port)/", token: nil)
                label = "daemon via \(tunnel.via) (\(tunnel.remote))"
            case (.command, let tunnel?):
                reach = .remoteStdio(host: tunnel.local.host, port: tunnel.local.port)
                label = "stdio via \(tunnel.via) (\(tunnel.remote))"
            }
            var configuration = CodexAppServerBackend.Configuration(
                reach: reach, profile: profile.name, directory: settings.directory, longLived: longLived,
                reconnect: reconnect, clientVersion: TetherVersion.string)
            configuration.label = label
            if let liveness = tuning.liveness { configuration.keepalive = liveness / 2 }
            return CodexAppServerBackend(configuration: configuration, logger: logger)
        case .notification(let settings):
            var configuration = NotificationRelayBackend.Configuration(
                url: try url(settings.url), peerID: settings.peerID, desktop: settings.desktop, profile: profile.name,
                stateDirectory: try ConfigPaths.createStateDirectory(environment: environment), reconnect: reconnect)
            if let liveness = tuning.liveness { configuration.liveness = liveness }
            return NotificationRelayBackend(configuration: configuration, logger: logger)
        case .gateway(let settings):
            var configuration = GatewayBackend.Configuration(
                baseURL: try url(settings.url), token: try settings.token?.resolve(environment),
                scope: GatewayRemoteScope(local: profile.name, remote: settings.remoteProfile), reconnect: reconnect)
            if let liveness = tuning.liveness { configuration.liveness = liveness }
            return GatewayBackend(configuration: configuration, logger: logger)
        }
    }

    /// Runs `body` with the backend after checking it can do what the command needs.
    func withBackend(requiring capability: BackendCapabilities, command: String,
                     _ body: (Profile, any Backend, EventPrinter) async throws -> Void) async throws {
        let (profile, backend) = try await makeBackend()
        defer { OpenTunnels.closeAll() }
        guard backend.capabilities.contains(capability) else {
            throw TetherError.unsupported("`tether \(command)`", backend: backend.kind)
        }
        let printer = makePrinter(profile: profile.name, backend: backend.kind, capabilities: backend.capabilities)
        defer { printer.finish() }
        try await body(profile, backend, printer)
        StatusLine.shared.clear()
    }
}
