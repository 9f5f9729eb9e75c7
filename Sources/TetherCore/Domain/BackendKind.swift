/// The backends Tether speaks; the raw value is a profile's `backend = "..."`. One
/// definition for the whole program: the config parses it, adapters report it, events carry it.
public enum BackendKind: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
    /// The Codex Worker: HTTP REST + SSE, Bearer token.
    case codexWorker = "codex-worker"
    /// The OpenCode server (`opencode serve`): HTTP REST + SSE, Basic auth.
    case openCode = "opencode"
    /// Codex's own app-server (`codex app-server`): JSON-RPC over WebSocket (a `ws://` listener or
    /// the daemon's unix socket) or over a child's stdio.
    case codex
    /// The CodexMonitor daemon: raw TCP, JSON lines.
    case codexMonitor = "codexmonitor"
    /// The ChainlessChain notification skill over the signaling WebSocket.
    case notification
    /// Another `tether serve`: its HTTP API, Bearer token, events resumed by the gateway's seq.
    case gateway

    public var description: String { rawValue }
}
