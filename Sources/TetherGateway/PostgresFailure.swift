import PostgresNIO

/// What a PostgresNIO error says, for a person: PSQLError's own description is a fixed text that
/// hides the server's message; the server's message and the connection's cause are what tell
/// what to fix (a wrong password, a database that does not exist, nothing listening).
enum PostgresFailure {
    static func reason(_ error: any Error) -> String {
        if let transaction = error as? PostgresTransactionError {
            if let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError { return reason(inner) }
        }
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo, let message = info[.message] {
            let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return message + state
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    /// The server's SQLSTATE, if the server answered with an error.
    static func state(_ error: any Error) -> String? {
        if let transaction = error as? PostgresTransactionError, let inner = transaction.closureError { return state(inner) }
        return (error as? PSQLError)?.serverInfo?[.sqlState]
    }
}
