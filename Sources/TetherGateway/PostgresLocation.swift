import Foundation
import PostgresNIO

/// `[serve] db = "postgres://USER@HOST:PORT/DB"` (or `postgresql://`): where a fleet's shared log
/// lives. The password is a secret: from `db_password`, or the URL's own; it is never part of
/// `description`, which is what logs and the first line of `tether serve` show.
public struct PostgresLocation: Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let user: String
    public let database: String
    let password: String?
    /// `?sslmode=disable|prefer|require` (libpq's names); `prefer` when absent.
    let sslMode: String

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Whether `text` names a PostgreSQL database rather than a SQLite file.
    public static func isPostgres(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// `password` (from `db_password`) wins over one in the URL.
    public init(_ text: String, password: String? = nil) throws {
        let example = "postgres://tether@127.0.0.1:5432/tether"
        guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty else {
            throw Invalid(description: "the database URL \"\(Self.redacted(text))\" is not postgres://USER@HOST:PORT/DB (e.g. \(example))")
        }
        guard let user = components.user, !user.isEmpty else {
            throw Invalid(description: "the database URL \"\(Self.redacted(text))\" names no user: write postgres://USER@HOST:PORT/DB (e.g. \(example))")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw Invalid(description: "the database URL \"\(Self.redacted(text))\" names no database: write postgres://USER@HOST:PORT/DB (e.g. \(example))")
        }
        let sslMode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw Invalid(description: "the database URL's sslmode \"\(sslMode)\" is not one of disable, prefer, require")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw Invalid(description: "the database URL's port \(port) is outside 1–65535")
        }
        self.host = host
        port = components.port ?? 5432
        self.user = user.removingPercentEncoding ?? user
        self.database = database.removingPercentEncoding ?? database
        self.password = password ?? components.password.map { $0.removingPercentEncoding ?? $0 }
        self.sslMode = sslMode
    }

    /// The URL without its password.
    public var description: String { "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)" }

    /// `text` with the password of a `scheme://user:password@…` replaced by `***`.
    public static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") else { return text }
        let userInfo = text[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// One connection's configuration, for the probe at start (`PostgresEventStore.open`).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS = switch sslMode {
        case "disable": .disable
        case "require": .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var configuration = PostgresConnection.Configuration(host: host, port: port, username: user, password: password,
                                                             database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    func clientConfiguration(maximumConnections: Int) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS = switch sslMode {
        case "disable": .disable
        case "require": .require(.makeClientConfiguration())
        default: .prefer(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(host: host, port: port, username: user, password: password,
                                                         database: database, tls: tls)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }
}
