import ArgumentParser
import Foundation
import TetherConfig
import TetherCore
import TetherGateway
import TetherGatewayClient
import TetherNet
import TetherStreaming

/// `tether serve`: the gateway — one API and a durable event log over every served profile.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve every profile over one HTTP API with a durable event log (the gateway).",
        discussion: """
            Subscribes to each served profile's live stream and appends every event to a SQLite \
            log with a seq that only grows, so a client that was away (a phone asleep, a laptop \
            closed) resumes with Last-Event-ID and gets every event it missed, once, in order — and \
            answers approvals from wherever it is.

            The first line on stdout is {"listen":URL,"db":PATH,"profiles":[…]}; logs go to stderr. \
            SIGINT or SIGTERM stops it gracefully (streams close, requests get up to 10 s).

            Routes (all under /v1; see GET /v1/openapi.json): health, profiles, events (SSE; \
            ?format=json for long-poll), approvals, profiles/P/sessions[/ID[/history|/turns|/abort]], \
            profiles/P/models, profiles/P/approvals/ID, profiles/P/notifications, login, logout, pair. \
            The page is at /.

            A profile with backend = "gateway" (another machine's tether serve) is fanned in: \
            each of its profiles is served as LOCAL/REMOTE, read from its log by seq; a gateway \
            that is this one, or fans it in, is refused at start (exit 78).

            --pair (or `tether pair` beside a running gateway) prints a one-time link and its QR \
            code on stderr: opened within 5 minutes, it logs one browser in, once.

            Config ([serve] table; flags override): listen, db (a path, or postgres://USER@HOST:PORT/DB for a fleet), db_password, retain_days, tokens (secrets: \
            { env = "NAME" } or { file = "PATH" }), notify = { url = "https://ntfy.example/topic" } (one text/plain \
            POST per approval) or { command = ["notify-send"] } (run with the title and the body appended), public_url, \
            idle_timeout (seconds, 60), max_connections (1024), login_idle_days (7), \
            login_lifetime_days (30), max_logins (1000).
            Without tokens the API needs no auth and only a loopback listen is allowed (browsers may \
            call it only from its own page, by address, localhost or public_url's host); to reach it \
            from a phone, keep it on loopback and forward it (ssh -R 7420:127.0.0.1:7420 vps), or \
            add a token and listen on the LAN.

            Global options go before `serve`: tether --config PATH serve -p home -p work
            """)

    @ParentCommand var root: Tether

    /// Shown in the help; the values are read by `ServedProfileArguments` (see there why).
    @Option(name: [.short, .customLong("profile")], help: ArgumentHelp("Serve this profile (repeatable; default: every profile of the config).", valueName: "name"))
    var profiles: [String] = []
    @Option(help: ArgumentHelp("Where to listen (default: [serve] listen, else 127.0.0.1:7420; port 0 picks a free one).", valueName: "host:port"),
            transform: ListenArgument.parse)
    var listen: HostPort?
    @Option(help: ArgumentHelp("The event log: a SQLite path, or a fleet's postgres://USER@HOST:PORT/DB (default: [serve] db, else $XDG_STATE_HOME/tether/gateway.sqlite).", valueName: "path-or-url"))
    var db: String?
    @Option(help: ArgumentHelp("Keep events this many days (default: [serve] retain_days, else 7; fractions work).", valueName: "days"))
    var retain: Double?
    @Flag(help: "Once listening, print a one-time link and its QR code on stderr that log one browser in (as `tether pair`).")
    var pair = false

    func validate() throws {
        if let retain, !(retain.isFinite && retain > 0) {
            throw ValidationError("--retain is a positive number of days, e.g. 7 or 0.5; got \(retain)")
        }
    }

    func run() async throws {
        let context = CommandContext(root.options)
        try await reportingFailures {
            let config = try context.loadConfig()
            let settings = config.serve ?? ServeSettings()
            var gatewayConfiguration = try Self.configuration(settings, flags: self, environment: context.environment)
            gatewayConfiguration.version = TetherVersion.string
            if let problem = gatewayConfiguration.exposureProblem {
                throw TetherError(.configuration, problem)
            }
            let names = try Self.servedProfileNames(config, selected: ServedProfileArguments.selected(in: CommandLine.arguments))
            var served: [ServedProfile] = []
            var fanIn = try await GatewayFanIn(context: context, config: config, database: gatewayConfiguration.databasePath,
                                               password: gatewayConfiguration.databasePassword)
            for name in names {
                let profile = try config.profile(named: name)
                let backend = try await context.makeBackend(for: profile, in: config, longLived: true)
                if let gateway = backend as? GatewayBackend {
                    served += try await fanIn.profiles(of: gateway)
                } else {
                    served.append(ServedProfile(name: name, backend: backend))
                }
            }
            gatewayConfiguration.upstream = fanIn.upstream.sorted()
            StatusLine.shared.clear()
            let gateway = Gateway(configuration: gatewayConfiguration, profiles: served, logger: context.logger)
            let database = gatewayConfiguration.databasePath
            let databasePassword = gatewayConfiguration.databasePassword
            let pairing = pair ? (listen: gatewayConfiguration.listen, publicURL: gatewayConfiguration.publicURL, logger: context.logger) : nil
            do {
                try await gateway.run { url in
                    let line: JSONValue = ["listen": .string(url), "db": .string(EventStoreOpening.shown(database)), "profiles": JSONValue(names)]
                    LineOutput.standardOutput.write(line.serialized + "\n")
                    // stdout keeps its one JSON line: the link is for the person at the terminal.
                    if let pairing {
                        Task {
                            do {
                                // The port actually bound (--listen may say 0); 0.0.0.0 is no address to open.
                                let bound = ListenAddress(host: pairing.listen.host, port: URL(string: url)?.port ?? pairing.listen.port)
                                let link = try await PairingLink.mint(database: database, password: databasePassword,
                                                                      base: PairingLink.base(listen: bound, publicURL: pairing.publicURL),
                                                                      logger: pairing.logger)
                                PairingLink.show(link, listen: bound, publicURL: pairing.publicURL, withURL: true)
                            } catch {
                                pairing.logger.error("cannot make a pairing link", metadata: ["error": "\(error)"])
                            }
                        }
                    }
                }
            } catch let error as GatewayStartError {
                throw TetherError(.configuration, error.description, hint: error.hint)
            }
            OpenTunnels.closeAll()
        }
    }

    static func servedProfileNames(_ config: ConfigFile, selected: [String]) throws -> [String] {
        if selected.isEmpty {
            guard !config.profileNames.isEmpty else {
                throw TetherError(.configuration, "\(config.path) defines no profiles, so there is nothing to serve",
                                  hint: "add a [profiles.NAME] table (see config/tether.example.toml)")
            }
            return config.profileNames
        }
        var names: [String] = []
        for name in selected where !names.contains(name) {
            _ = try config.profile(named: name)
            names.append(name)
        }
        return names
    }

    /// The `[serve]` table with the flags over it, tokens resolved.
    static func configuration(_ settings: ServeSettings, flags: ServeCommand, environment: ConfigEnvironment) throws -> GatewayConfiguration {
        let listen = (flags.listen ?? settings.listen).map(ListenAddress.init) ?? .standard
        let database = flags.db.map { ServeSettings.isPostgres($0) ? $0 : environment.expandingTilde(in: $0) } ?? settings.db
            ?? ConfigPaths.stateDirectory(environment: environment) + "/gateway.sqlite"
        let tokens = try settings.tokens.map { try $0.resolve(environment) }
        var configuration = GatewayConfiguration(listen: listen, databasePath: database, retainDays: flags.retain ?? settings.retainDays ?? 7,
                                    tokens: tokens, notifyURL: settings.notifyURL?.absoluteString, publicURL: settings.publicURL?.absoluteString)
        configuration.notifyCommand = settings.notifyCommand
        // `--db postgres://…` keeps its URL's password; `db_password` is the config's.
        if flags.db == nil || flags.db.map(ServeSettings.isPostgres) == true {
            configuration.databasePassword = try settings.dbPassword?.resolve(environment)
        }
        if let idleTimeout = settings.idleTimeout { configuration.idleTimeout = idleTimeout }
        if let maxConnections = settings.maxConnections { configuration.maxConnections = maxConnections }
        if let days = settings.loginIdleDays { configuration.logins.idle = .days(days) }
        if let days = settings.loginLifetimeDays { configuration.logins.lifetime = .days(days) }
        if let count = settings.maxLogins { configuration.logins.maxLogins = count }
        return configuration
    }
}
