/// Where Codex keeps its state on this machine: `$CODEX_HOME`, else `~/.codex`.
public enum CodexHome {
    public static func directory(environment: ConfigEnvironment) -> String {
        environment.variables["CODEX_HOME"].flatMap { $0.isEmpty ? nil : environment.expandingTilde(in: $0) }
            ?? environment.expandingTilde(in: "~/.codex")
    }

    /// The app-server daemon's control socket (`codex app-server daemon start` makes it; it is
    /// a symlink to a short path under the temporary directory).
    public static func daemonSocket(environment: ConfigEnvironment) -> String {
        directory(environment: environment) + "/app-server-control/app-server-control.sock"
    }
}
