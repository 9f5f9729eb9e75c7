import Logging
import TetherAdapterSupport
import TetherCore
import TetherNet
import TetherStreaming

/// One initialized connection to an app-server: calls with Codex's errors turned into
/// `TetherError`s, answers to its requests, and the queue of what it sends unasked.
final class CodexAppServerClient: Sendable {
    let rpc: CodexAppServerRPC
    let configuration: CodexAppServerBackend.Configuration
    /// `initialize`'s `userAgent` (`tether/0.163.0 (…)`: the server's version after the slash).
    let userAgent: String?
    private let logger: Logger

    private init(rpc: CodexAppServerRPC, configuration: CodexAppServerBackend.Configuration, userAgent: String?, logger: Logger) {
        self.rpc = rpc
        self.configuration = configuration
        self.userAgent = userAgent
        self.logger = logger
    }

    /// Connects (``CodexAppServerConnector``), then `initialize` + `initialized`.
    /// What the server sends unasked goes to `deliver`, from the connection's reader; `onCall`
    /// is told when a call starts waiting (``CodexAppServerRPC``).
    static func open(_ configuration: CodexAppServerBackend.Configuration, logger: Logger, onCall: @escaping @Sendable () -> Void,
                     deliver: @escaping @Sendable (CodexAppServerRPC.Incoming, CodexAppServerRPC) async -> Void) async throws
        -> CodexAppServerClient {
        let link = try await CodexAppServerConnector.connect(configuration, logger: logger)
        let rpc = CodexAppServerRPC(link: link, logger: logger, onCall: onCall, deliver: deliver)
        rpc.start()
        let unready = CodexAppServerClient(rpc: rpc, configuration: configuration, userAgent: nil, logger: logger)
        do {
            let result = try await unready.call("initialize", [
                "clientInfo": ["name": "tether", "title": "Tether", "version": .string(configuration.clientVersion)],
                "capabilities": ["experimentalApi": false],
            ], doing: "greeting the app-server (initialize)")
            try await rpc.notify("initialized")
            return CodexAppServerClient(rpc: rpc, configuration: configuration, userAgent: result["userAgent"]?.string, logger: logger)
        } catch {
            await rpc.close()
            throw error
        }
    }

    func close() async { await rpc.close() }

    /// The app-server's version, from `userAgent` (`NAME/VERSION (…)`).
    var serverVersion: String? {
        guard let agent = userAgent, let slash = agent.firstIndex(of: "/") else { return nil }
        return String(agent[agent.index(after: slash)...].prefix { $0 != " " })
    }

    /// Calls `method`; an overloaded server (-32001) is asked again after a short backoff.
    /// `doing` says what the call was for, in the error a user sees.
    func call(_ method: String, _ params: JSONObject, doing: String, timeout: Duration? = nil) async throws -> JSONValue {
        var delay = Duration.milliseconds(100)
        for attempt in 1...6 {
            do {
                return try await rpc.call(method, params: .object(params), timeout: timeout ?? configuration.requestTimeout)
            } catch .remote(let error) where error.isOverloaded && attempt < 6 {
                logger.debug("the app-server is overloaded; asking again", metadata: ["method": "\(method)", "in": "\(delay)"])
                try await Task.sleep(for: delay)
                delay *= 2
            } catch {
                throw tetherError(error, doing: doing)
            }
        }
        throw TetherError(.unavailable, "codex app-server at \(configuration.endpoint) stayed overloaded while \(doing)", retryable: true)
    }

    /// Answers the server's request `id` with `result`.
    func respond(to id: JSONValue, result: JSONValue, doing: String) async throws {
        do {
            try await rpc.respond(to: id, result: result)
        } catch {
            throw tetherError(.closed(error), doing: doing)
        }
    }

    func tetherError(_ failure: CodexAppServerRPC.Failure, doing: String) -> TetherError {
        switch failure {
        case .remote(let error):
            return Self.tetherError(error, doing: doing)
        case .timedOut(let method, let after):
            return TetherError(.timeout, "codex app-server at \(configuration.endpoint) did not answer \(method) within \(after.secondsText) (\(doing))",
                               retryable: true)
        case .closed(let error as NetError):
            return error.tetherError(service: "codex app-server")
        case .closed(let error?):
            return TetherError(.unavailable, "the connection to codex app-server at \(configuration.endpoint) failed while \(doing): \(error)", retryable: true)
        case .closed(nil):
            return TetherError(.unavailable, "codex app-server at \(configuration.endpoint) closed the connection while \(doing)", retryable: true)
        }
    }

    static func tetherError(_ error: CodexAppServerRPC.RemoteError, doing: String) -> TetherError {
        let message = error.message
        if error.isShuttingDown {
            return TetherError(.unavailable, "codex app-server is shutting down and refused \(doing)",
                               hint: "it takes new work again once restarted; Tether reconnects by itself", retryable: true)
        }
        let missing = ["thread not found", "thread not loaded", "invalid thread id", "no rollout found"]
        if missing.contains(where: message.hasPrefix) {
            return TetherError(.notFound, "Codex: \(message) (\(doing))", hint: "`tether sessions list` shows this profile's sessions")
        }
        if message.contains("already has an active writer") {
            return TetherError(.conflict, "Codex: \(message) (\(doing))",
                               hint: "another app-server process owns this thread: use the one that runs it (one app-server per CODEX_HOME)")
        }
        if message.hasPrefix("no active turn") || message.hasPrefix("expected active turn id") {
            return TetherError(.conflict, "Codex: \(message) (\(doing))", hint: "`tether events --session ID` shows its turns")
        }
        return TetherError(.failed, "Codex refused \(doing): \(error.description)")
    }
}
