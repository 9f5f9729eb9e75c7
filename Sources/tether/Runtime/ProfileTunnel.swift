import Foundation
import Logging
import TetherConfig
import TetherCore
import TetherSSH

/// A profile's `tunnel = NAME`: the SSH tunnel is opened before the backend, and the backend is
/// pointed at its loopback end. Adapters never know.
struct ProfileTunnel {
    /// Where each connection through the tunnel goes.
    enum Target: CustomStringConvertible {
        /// A TCP address, as the SSH server sees it (direct-tcpip).
        case address(HostPort)
        /// A command the SSH server runs for each connection (an exec channel), its stdin and
        /// stdout being the connection: `codex app-server proxy`, `codex app-server`.
        case command(String)

        var description: String {
            switch self {
            case .address(let address): return address.description
            case .command(let command): return "exec: \(command)"
            }
        }
    }

    let tunnel: SSHTunnel
    let local: (host: String, port: Int)
    let remote: Target
    let via: String

    /// Opens the tunnel to `target` (the backend as the SSH server sees it).
    static func open(_ config: TunnelConfig, to target: Target, environment: ConfigEnvironment, logger: Logger) async throws -> ProfileTunnel {
        let passphrase = try config.passphrase?.resolve(environment)
        let pins = (try? ConfigPaths.createStateDirectory(environment: environment)).map { $0 + "/known_hosts.tofu" }
        let configuration = SSHTunnel.Configuration(
            host: config.host, port: config.port, user: config.user,
            identityPath: config.identity.map(environment.expandingTilde), passphrase: passphrase,
            useAgent: config.agent, knownHostsPath: environment.expandingTilde(in: config.knownHosts),
            trustOnFirstUse: config.trustOnFirstUse, pinStorePath: pins, localPort: config.localPort,
            keepalive: config.keepalive, targetHost: target.address?.host ?? "", targetPort: target.address?.port ?? 0,
            targetCommand: target.command)
        let tunnel = SSHTunnel(configuration: configuration, logger: logger)
        let via = "\(config.user)@\(HostPort(host: config.host, port: config.port))"
        StatusLine.shared.show("opening tunnel \(config.name) via \(via) to \(target)…")
        do {
            let local = try await tunnel.start()
            return ProfileTunnel(tunnel: tunnel, local: local, remote: target, via: via)
        } catch let error as SSHError {
            throw Self.tetherError(error, tunnel: config.name)
        }
    }

    static func tetherError(_ error: SSHError, tunnel name: String) -> TetherError {
        let message = "tunnel \(name): \(error.message)"
        switch error.kind {
        case .hostKeyUnknown, .hostKeyMismatch, .hostKeyRevoked, .authenticationFailed:
            return TetherError(.authentication, message)
        case .invalidConfiguration:
            return TetherError(.configuration, message)
        default:
            return TetherError(.unavailable, message, retryable: true)
        }
    }

    /// The profile's `url` with its host and port replaced by the tunnel's loopback end.
    func rewrite(_ url: URL) throws -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        if components.scheme == "https" || components.scheme == "wss" {
            throw TetherError(.configuration, "\(url.absoluteString) is TLS, and TLS through a tunnel is not supported yet (the certificate names \(url.host ?? "the host"), not 127.0.0.1)",
                              hint: "the tunnel already encrypts the link: use \(components.scheme == "https" ? "http" : "ws")://\(remote) as the SSH server sees it")
        }
        components.host = local.host
        components.port = local.port
        return components.url ?? url
    }

    /// Where a URL's server is, with the scheme's default port.
    /// Where a profile's tunnel leads, as the SSH server sees it.
    static func target(of settings: BackendSettings) -> Target {
        switch settings {
        case .openCode(let settings): return .address(target(of: settings.url))
        case .codexWorker(let settings): return .address(target(of: settings.url))
        case .notification(let settings): return .address(target(of: settings.url))
        case .gateway(let settings): return .address(target(of: settings.url))
        case .codexMonitor(let settings): return .address(settings.address)
        case .codex(let settings):
            switch settings.reach {
            case .webSocket(let url): return .address(target(of: url))
            // The daemon's own relay: bytes between its stdio and the daemon's socket.
            case .daemon(let socket): return .command(shellCommand([settings.codex, "app-server", "proxy"] + (socket.map { ["--sock", $0] } ?? [])))
            case .command(let arguments): return .command(shellCommand(arguments))
            }
        }
    }

    /// `arguments` as one POSIX shell command line (the SSH server runs exec requests through the
    /// user's shell): each word single-quoted.
    static func shellCommand(_ arguments: [String]) -> String {
        arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
    }

    static func target(of url: URL) -> HostPort {
        let port = url.port ?? (["https", "wss"].contains(url.scheme ?? "") ? 443 : 80)
        return HostPort(host: url.host ?? "127.0.0.1", port: port)
    }
}

/// Tunnels opened by this process, kept open until it exits.
enum OpenTunnels {
    nonisolated(unsafe) private static var tunnels: [SSHTunnel] = []
    private static let lock = NSLock()
    static func keep(_ tunnel: SSHTunnel) { lock.withLock { tunnels.append(tunnel) } }
    static func closeAll() {
        let all = lock.withLock { defer { tunnels.removeAll() }; return tunnels }
        for tunnel in all { tunnel.stop() }
    }
}

extension ProfileTunnel.Target {
    var address: HostPort? {
        if case .address(let address) = self { return address }
        return nil
    }

    var command: String? {
        if case .command(let command) = self { return command }
        return nil
    }
}
