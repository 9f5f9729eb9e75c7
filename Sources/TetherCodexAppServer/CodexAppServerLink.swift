import TetherNet

/// One connection to an app-server, as JSON texts: a message per WebSocket text frame (a
/// `ws://` listener, the daemon's unix socket) or per line (a stdio child). Which one is the
/// connector's business (``CodexAppServerConnector``); everything above speaks texts, received
/// as their UTF-8 bytes.
protocol CodexAppServerLink: Sendable {
    /// Where it leads, for messages (`ws://…`, `daemon at …`, `stdio: codex app-server`).
    var endpoint: String { get }
    func send(_ text: String) async throws
    /// The next messages, in order, each its UTF-8 bytes; nil once the peer ended the
    /// connection cleanly.
    func receive() async throws -> [[UInt8]]?
    func close() async
}

/// Text frames; binary ones are ignored, as the app-server ignores them.
struct WebSocketLink: CodexAppServerLink {
    let connection: WebSocketConnection
    let endpoint: String

    func send(_ text: String) async throws { try await connection.send(text: text) }

    func receive() async throws -> [[UInt8]]? {
        while let message = try await connection.receive() {
            if case .text(let text) = message { return [Array(text.utf8)] }
        }
        return nil
    }

    func close() async { await connection.close() }
}

/// Lines over a socket: an app-server's stdio carried by a connection (an SSH exec channel).
struct LineLink: CodexAppServerLink {
    let connection: TCPLineConnection
    let endpoint: String

    func send(_ text: String) async throws { try await connection.send(Array(text.utf8)) }

    func receive() async throws -> [[UInt8]]? {
        try await connection.receiveBatch()
    }

    func close() async { connection.close() }
}

/// Lines of a child's stdout, and lines to its stdin.
struct StdioLink: CodexAppServerLink {
    let child: StdioChild

    var endpoint: String { "stdio: " + child.commandLine }

    func send(_ text: String) async throws { try await child.connection.send(Array(text.utf8)) }

    func receive() async throws -> [[UInt8]]? {
        try await child.connection.receiveBatch()
    }

    func close() async { await child.stop() }
}
