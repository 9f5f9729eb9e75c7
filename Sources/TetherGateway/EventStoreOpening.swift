import Logging

/// Opens the log that `[serve] db` (or `--db`) names: a `postgres://` URL is a fleet's shared
/// log, anything else the path of the embedded SQLite file.
public enum EventStoreOpening {
    /// `password`: `db_password`'s value (a PostgreSQL URL may carry its own instead).
    /// `leases`: how many profiles this replica may subscribe to (each holds a connection).
    public static func open(_ database: String, password: String? = nil, logger: Logger,
                            leases: Int = 0) async throws(GatewayStartError) -> any EventStore {
        guard PostgresLocation.isPostgres(database) else {
            do {
                return try EventLog(path: database, logger: logger)
            } catch let error as EventLog.OpenError {
                throw GatewayStartError.cannotOpenLog(error)
            } catch {
                throw GatewayStartError.cannotOpenLog(EventLog.OpenError(path: database, reason: "\(error)"))
            }
        }
        let location: PostgresLocation
        do {
            location = try PostgresLocation(database, password: password)
        } catch {
            throw GatewayStartError(description: "\(error)", hint: "set [serve] db (or --db) to postgres://USER@HOST:PORT/DB, or to a path for a SQLite file")
        }
        do {
            return try await PostgresEventStore.open(location, logger: logger, leases: leases)
        } catch {
            throw GatewayStartError.cannotOpenSharedLog(location, error)
        }
    }

    /// What the first line of `tether serve` shows as `db`: never a password.
    public static func shown(_ database: String) -> String {
        PostgresLocation.isPostgres(database) ? PostgresLocation.redacted(database) : database
    }
}
