import Foundation
import TetherCore

/// The `[serve]` table: how `tether serve` (the gateway) runs. Flags override each key.
///
/// ```toml
/// [serve]
/// listen = "127.0.0.1:7420"
/// db = "~/.local/state/tether/gateway.sqlite"   # or a fleet's "postgres://USER@HOST:PORT/DB"
/// db_password = { env = "TETHER_DB_PASSWORD" }  # PostgreSQL's password (else the URL's own)
/// retain_days = 7
/// tokens = [{ env = "TETHER_SERVE_TOKEN" }]
/// notify = { url = "https://ntfy.example/topic" }
/// public_url = "https://phone-gateway.example"
/// idle_timeout = 60          # seconds a connection may send nothing (or half a request)
/// max_connections = 1024     # open client connections (never more than the descriptors allow)
/// login_idle_days = 7        # a login cookie unused this long expires
/// login_lifetime_days = 30   # and every login cookie expires this long after the login
/// max_logins = 1000          # live login cookies; a new login past it ends the oldest
/// ```
public struct ServeSettings: Sendable, Equatable {
    public static let keys = ["listen", "db", "db_password", "retain_days", "tokens", "notify", "public_url",
                              "idle_timeout", "max_connections", "login_idle_days", "login_lifetime_days", "max_logins"]

    /// Read with the same rules as `--listen` (`HostPort(listening:)`).
    public var listen: HostPort?
    /// A SQLite file's path (tilde expanded, relative to the config file), or a `postgres://` URL.
    public var db: String?
    /// `db_password`, or the password of the `db` URL (a literal: refused in a file others can read).
    public var dbPassword: ConfiguredSecret?
    public var retainDays: Double?
    public var tokens: [ConfiguredSecret]
    public var notifyURL: URL?
    public var notifyCommand: [String]?
    public var publicURL: URL?
    public var idleTimeout: Duration?
    public var maxConnections: Int?
    public var loginIdleDays: Double?
    public var loginLifetimeDays: Double?
    public var maxLogins: Int?

    public init(listen: HostPort? = nil, db: String? = nil, retainDays: Double? = nil, tokens: [ConfiguredSecret] = [],
                notifyURL: URL? = nil, notifyCommand: [String]? = nil, publicURL: URL? = nil) {
        self.listen = listen
        self.db = db
        self.retainDays = retainDays
        self.tokens = tokens
        self.notifyURL = notifyURL
        self.notifyCommand = notifyCommand
        self.publicURL = publicURL
    }

    init(table: ConfigTable) throws {
        try table.rejectUnknownKeys(Self.keys, in: "the [serve] table")
        if let text = try table.string("listen", example: "\"127.0.0.1:7420\"") {
            guard let address = HostPort(listening: text) else {
                throw table.invalid("listen", "\"\(text)\" is not HOST:PORT (port 0 picks a free one; [::1]:PORT for IPv6)",
                                    example: "\"127.0.0.1:7420\"")
            }
            listen = address
        }
        if let text = try table.string("db", example: "\"~/.local/state/tether/gateway.sqlite\""), Self.isPostgres(text) {
            db = text
            if let password = URLComponents(string: text)?.password, !password.isEmpty {
                // The URL's own password is a literal secret, with a literal's rules.
                dbPassword = ConfiguredSecret(reference: .literal(password.removingPercentEncoding ?? password),
                                              key: table.keyPath("db"), file: table.file)
            }
        } else {
            db = try table.localPath("db", example: "\"~/.local/state/tether/gateway.sqlite\"")
        }
        if let password = try table.secret("db_password") { dbPassword = password }
        retainDays = try table.number("retain_days", in: 0.0001...36_500, example: "7")
        tokens = try table.secrets("tokens") ?? []
        publicURL = try table.url("public_url", schemes: ["http", "https"], example: "\"https://gateway.example\"")
        idleTimeout = try table.seconds("idle_timeout", in: 0.1...86_400, example: "60")
        maxConnections = try table.integer("max_connections", in: 1...1_000_000, example: "1024")
        loginIdleDays = try table.number("login_idle_days", in: 0.00001...36_500, example: "7")
        loginLifetimeDays = try table.number("login_lifetime_days", in: 0.00001...36_500, example: "30")
        maxLogins = try table.integer("max_logins", in: 1...1_000_000, example: "1000")
        if let notify = try table.table("notify", example: "notify = { url = \"https://ntfy.example/topic\" }") {
            try notify.rejectUnknownKeys(["url", "command"], in: "[serve] notify")
            notifyURL = try notify.url("url", schemes: ["http", "https"], example: "\"https://ntfy.example/topic\"")
            notifyCommand = try notify.strings("command", example: "[\"notify-send\", \"Tether\"]")
            if notifyURL != nil, notifyCommand != nil {
                throw table.invalid("notify", "has both url and command; a push goes one way",
                                    example: "{ url = \"https://ntfy.example/topic\" }")
            }
            if notifyURL == nil, notifyCommand == nil {
                throw table.invalid("notify", "says neither where to push (url) nor what to run (command)",
                                    example: "{ url = \"https://ntfy.example/topic\" }")
            }
        }
    }
}

extension ServeSettings {
    /// Whether `db` names a PostgreSQL database (a fleet's shared log) rather than a SQLite file.
    public static func isPostgres(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }
}
