import Logging
import TetherAdapterSupport
import TetherCore
import TetherNet

/// The three ways to an app-server, each giving a ``CodexAppServerLink``: a `ws://` listener
/// (its capability token as `Authorization: Bearer`), the daemon's unix socket (WebSocket over
/// it, no auth: file permissions guard it), or a stdio child.
enum CodexAppServerConnector {
    static func connect(_ configuration: CodexAppServerBackend.Configuration, logger: Logger) async throws -> any CodexAppServerLink {
        switch configuration.reach {
        case .webSocket(let url, let token):
            let connection = try await webSocket(.init(
                url: url, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [],
                connectTimeout: configuration.connectTimeout, maxMessageSize: configuration.maxMessageSize,
                pingInterval: configuration.keepalive, liveness: configuration.keepalive * 2), configuration, logger)
            return WebSocketLink(connection: connection, endpoint: configuration.endpoint)
        case .daemon(let socket):
            // The upgrade's URL only gives the request line and Host: the socket is the address.
            let connection = try await webSocket(.init(
                url: "ws://localhost/", connectTimeout: configuration.connectTimeout, maxMessageSize: configuration.maxMessageSize,
                pingInterval: configuration.keepalive, liveness: configuration.keepalive * 2, unixSocketPath: socket),
                configuration, logger)
            return WebSocketLink(connection: connection, endpoint: configuration.endpoint)
        case .remoteStdio(let host, let port):
            do {
                let connection = try await TCPLineConnection.connect(host: host, port: port, timeout: configuration.connectTimeout,
                                                                     maxLineLength: configuration.maxMessageSize, bufferedBytes: 4 << 20,
                                                                     logger: logger)
                return LineLink(connection: connection, endpoint: configuration.endpoint)
            } catch {
                throw error.tetherError(service: "codex app-server (\(configuration.endpoint))")
            }
        case .command(let arguments):
            do {
                return StdioLink(child: try StdioChild.spawn(arguments, maxLineLength: configuration.maxMessageSize, logger: logger))
            } catch {
                throw TetherError(.unavailable, "cannot start the app-server (\(arguments.joined(separator: " "))): \(error.detail)",
                                  hint: "is codex installed on this machine and in PATH? `command` in the profile names the program")
            }
        }
    }

    private static func webSocket(_ options: WebSocketConnection.Configuration, _ configuration: CodexAppServerBackend.Configuration,
                                  _ logger: Logger) async throws -> WebSocketConnection {
        do {
            return try await WebSocketConnection.connect(options, logger: logger)
        } catch {
            var failure = error.tetherError(service: "codex app-server")
            switch (configuration.reach, error.kind) {
            case (.webSocket, .status(401)):
                failure = TetherError(.authentication, "codex app-server at \(configuration.endpoint) refused the token (HTTP 401)",
                                      hint: "set the profile's token to the one codex was started with (--ws-token-file)")
            case (.daemon(let socket), .connect):
                failure = TetherError(.unavailable, "no codex app-server daemon answers at \(socket): \(error.detail)",
                                      hint: "start it on that machine with `codex app-server daemon start`", retryable: true)
            default:
                break
            }
            throw failure
        }
    }
}
