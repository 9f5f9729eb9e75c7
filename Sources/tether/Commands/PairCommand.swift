import ArgumentParser
import Foundation
import TetherConfig
import TetherCore
import TetherGateway

/// `tether pair`: a one-time link and its QR code that log one browser (a phone) into the
/// gateway, with no token typed or shown.
struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Print a one-time link (and its QR code) that logs one browser into the gateway.",
        discussion: """
            Mints a pairing code in the gateway's database (the same config and --db as `tether serve`; \
            the gateway may be running) and prints the page's URL with the code in its fragment on \
            stdout, and a QR code of it on stderr. Opened, the page trades the code for its login \
            cookie (POST /v1/pair). A code works once, for 5 minutes; it is not a token.

            The URL is [serve] public_url when set, else the listen address (--listen as given to serve).
            """)

    @ParentCommand var root: Tether

    @Option(help: ArgumentHelp("The gateway's listen address, for the link (default: [serve] listen, else 127.0.0.1:7420).", valueName: "host:port"),
            transform: ListenArgument.parse)
    var listen: HostPort?
    @Option(help: ArgumentHelp("The gateway's event log: a SQLite path or postgres:// URL (default: [serve] db, else $XDG_STATE_HOME/tether/gateway.sqlite).", valueName: "path"))
    var db: String?

    func run() async throws {
        let context = CommandContext(root.options)
        try await reportingFailures {
            let config = try context.loadConfig()
            let settings = config.serve ?? ServeSettings()
            let listen = (listen ?? settings.listen).map(ListenAddress.init) ?? .standard
            let database = db.map { ServeSettings.isPostgres($0) ? $0 : context.environment.expandingTilde(in: $0) } ?? settings.db
                ?? ConfigPaths.stateDirectory(environment: context.environment) + "/gateway.sqlite"
            let publicURL = settings.publicURL?.absoluteString
            if publicURL == nil, listen.port == 0 {
                throw TetherError(.usage, "the link needs the gateway's port, and --listen says 0 (any free port)",
                                  hint: "pass the address tether serve printed, e.g. tether pair --listen 127.0.0.1:7420")
            }
            let password = db == nil || db.map(ServeSettings.isPostgres) == true ? try settings.dbPassword?.resolve(context.environment) : nil
            let url: String
            do {
                url = try await PairingLink.mint(database: database, password: password,
                                                 base: PairingLink.base(listen: listen, publicURL: publicURL), logger: context.logger)
            } catch let error as GatewayStartError {
                throw TetherError(.configuration, error.description, hint: error.hint)
            }
            PairingLink.show(url, listen: listen, publicURL: publicURL, withURL: false)
            LineOutput.standardOutput.write(url + "\n")
        }
    }
}
