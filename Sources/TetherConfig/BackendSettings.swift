import Foundation
import TetherCore

/// A profile's backend-specific settings, typed per backend.
public enum BackendSettings: Sendable, Equatable {
    case codexWorker(CodexWorkerSettings)
    case openCode(OpenCodeSettings)
    case codex(CodexAppServerSettings)
    case codexMonitor(CodexMonitorSettings)
    case notification(NotificationSettings)
    case gateway(GatewaySettings)

    public var kind: BackendKind {
        switch self {
        case .codexWorker: return .codexWorker
        case .openCode: return .openCode
        case .codex: return .codex
        case .codexMonitor: return .codexMonitor
        case .notification: return .notification
        case .gateway: return .gateway
        }
    }

    /// Where the backend is, as the profile names it (through a tunnel: as the SSH server sees it).
    public var endpoint: String {
        switch self {
        case .codexWorker(let settings): return settings.url.absoluteString
        case .openCode(let settings): return settings.url.absoluteString
        case .codex(let settings): return settings.reach.description
        case .codexMonitor(let settings): return settings.address.description
        case .notification(let settings): return settings.url.absoluteString
        case .gateway(let settings): return settings.url.absoluteString
        }
    }
}

/// `backend = "codex-worker"`: `url` (http/https), `token` (Bearer; optional, the worker may run without auth).
public struct CodexWorkerSettings: Sendable, Equatable {
    public let url: URL
    public let token: ConfiguredSecret?

    public init(url: URL, token: ConfiguredSecret?) {
        self.url = url
        self.token = token
    }
}

/// `backend = "opencode"`: `url` (http/https), Basic auth `username` (default `opencode`) and
/// `password` (optional: no password means the server runs without auth), `directory` (filter).
public struct OpenCodeSettings: Sendable, Equatable {
    public static let defaultUsername = "opencode"

    public let url: URL
    public let username: String
    public let password: ConfiguredSecret?
    /// A directory on the server's machine (not expanded locally); nil means all projects.
    public let directory: String?

    public init(url: URL, username: String = OpenCodeSettings.defaultUsername, password: ConfiguredSecret?, directory: String?) {
        self.url = url
        self.username = username
        self.password = password
        self.directory = directory
    }
}

/// `backend = "codex"`: how to reach `codex app-server` — exactly one of `url` (`ws://HOST:PORT`,
/// with an optional capability `token`), `daemon = true` / `socket = PATH` (the app-server daemon's
/// unix socket), or `command` (a stdio child, e.g. `["codex", "app-server"]`) — and `directory`,
/// where new threads start (on the agent's machine). Through a `tunnel`, the daemon is reached
/// by running `codex app-server proxy` (`codex` names the program) and a command is run as it
/// is, on an SSH exec channel.
public struct CodexAppServerSettings: Sendable, Equatable {
    public enum Reach: Sendable, Equatable, CustomStringConvertible {
        /// A `codex app-server --listen ws://…` server.
        case webSocket(URL)
        /// The daemon's socket: nil means its default place under `$CODEX_HOME` (on the agent's machine).
        case daemon(socket: String?)
        /// A child speaking over its stdin and stdout, started by whoever serves the profile.
        case command([String])

        public var description: String {
            switch self {
            case .webSocket(let url): return url.absoluteString
            case .daemon(let socket): return "daemon at " + (socket ?? "$CODEX_HOME/app-server-control/app-server-control.sock")
            case .command(let argv): return "stdio: " + argv.joined(separator: " ")
            }
        }
    }

    public let reach: Reach
    public let token: ConfiguredSecret?
    public let directory: String?
    /// The codex program on the agent's machine, for the daemon's relay (`codex app-server
    /// proxy`) run through a tunnel.
    public let codex: String

    public init(reach: Reach, token: ConfiguredSecret?, directory: String?, codex: String = "codex") {
        self.reach = reach
        self.token = token
        self.directory = directory
        self.codex = codex
    }
}

/// `backend = "codexmonitor"`: `address` (`host:port`), `token` (optional), `workspace` (id; nil means all).
public struct CodexMonitorSettings: Sendable, Equatable {
    public let address: HostPort
    public let token: ConfiguredSecret?
    public let workspace: String?

    public init(address: HostPort, token: ConfiguredSecret?, workspace: String?) {
        self.address = address
        self.token = token
        self.workspace = workspace
    }
}

/// `backend = "notification"`: signaling relay `url` (ws/wss), our `peer_id` (nil: the adapter's
/// stable default) and the `desktop` peer id (nil: discovered with `get-peers`).
public struct NotificationSettings: Sendable, Equatable {
    public let url: URL
    public let peerID: String?
    public let desktop: String?

    public init(url: URL, peerID: String?, desktop: String?) {
        self.url = url
        self.peerID = peerID
        self.desktop = desktop
    }
}

/// `backend = "gateway"`: another `tether serve` at `url` (http/https), its Bearer `token`
/// (optional: a loopback gateway may run without one), and `remote_profile`, the one of its
/// profiles this profile stands for (nil: all of them, each id then carrying its profile).
public struct GatewaySettings: Sendable, Equatable {
    public let url: URL
    public let token: ConfiguredSecret?
    public let remoteProfile: String?

    public init(url: URL, token: ConfiguredSecret?, remoteProfile: String?) {
        self.url = url
        self.token = token
        self.remoteProfile = remoteProfile
    }
}
