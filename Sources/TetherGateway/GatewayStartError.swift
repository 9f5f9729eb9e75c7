/// Why the gateway could not start serving, said so that the fix is obvious.
public struct GatewayStartError: Error, CustomStringConvertible {
    public let description: String
    public let hint: String

    static func cannotListen(_ listen: ListenAddress, _ error: any Error) -> GatewayStartError {
        let reason = "\(error)".contains("in use") ? "the address is already in use" : "\(error)"
        return GatewayStartError(description: "cannot listen on \(listen): \(reason)",
                                 hint: "pass --listen with another HOST:PORT (port 0 picks a free one), or stop what holds it")
    }

    static func cannotOpenLog(_ error: EventLog.OpenError) -> GatewayStartError {
        GatewayStartError(description: "cannot open the event log at \(error.path): \(error.reason)",
                          hint: "pass --db with a writable path (or set [serve] db); deleting the file starts the log clean")
    }
}

extension GatewayStartError {
    static func cannotOpenSharedLog(_ location: PostgresLocation, _ error: any Error) -> GatewayStartError {
        let reason = (error as? PostgresEventStore.OpenError)?.reason ?? PostgresFailure.reason(error)
        return GatewayStartError(description: "cannot open the event log in PostgreSQL at \(location): \(reason)",
                                 hint: "check that PostgreSQL listens at \(location.host):\(location.port), that database \(location.database) "
                                     + "exists and that user \(location.user) may use it with the password of [serve] db_password "
                                     + "(or the URL's); or set [serve] db to a path for a SQLite file")
    }
}
