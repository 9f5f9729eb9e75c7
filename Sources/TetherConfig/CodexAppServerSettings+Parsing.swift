import Foundation

extension CodexAppServerSettings {
    /// A `backend = "codex"` profile's keys: exactly one way to reach the app-server.
    init(table: ConfigTable) throws {
        let url = try table.url("url", schemes: ["ws"], example: "\"ws://127.0.0.1:4500\"")
        let daemon = try table.boolean("daemon", example: "true")
        // On the agent's machine (through a tunnel, not this one): expanded there, by its shell.
        let socket = try table.string("socket", example: "\"~/.codex/app-server-control/app-server-control.sock\"")
        let command = try table.strings("command", example: "[\"codex\", \"app-server\"]")
        if let command, command.isEmpty {
            throw table.invalid("command", "must name a program", example: "[\"codex\", \"app-server\"]")
        }
        let ways = [url != nil ? "url" : nil, (daemon == true || socket != nil) ? "daemon/socket" : nil, command != nil ? "command" : nil]
            .compactMap { $0 }
        guard ways.count == 1 else {
            let problem = ways.isEmpty ? "missing: how to reach codex app-server"
                : "gives \(ways.joined(separator: " and ")): a profile reaches the app-server one way"
            throw table.error(ways.isEmpty ? .missingKey : .invalidValue, nil, problem: problem,
                              fix: "keep one of url = \"ws://HOST:PORT\" (codex app-server --listen ws://…), daemon = true (codex app-server daemon start) or command = [\"codex\", \"app-server\"] in \(table.header)")
        }
        if daemon == false, socket == nil, url == nil, command == nil {
            throw table.invalid("daemon", "false says nothing: use url or command instead", example: "true")
        }
        let token = try table.secret("token")
        if token != nil, url == nil {
            throw table.invalid("token", "only a ws:// listener takes a token (the daemon's socket and a stdio child have no auth)",
                                example: "{ env = \"CODEX_APP_SERVER_TOKEN\" }")
        }
        let reach: Reach
        if let url {
            reach = .webSocket(url)
        } else if let command {
            reach = .command(command)
        } else {
            reach = .daemon(socket: socket)
        }
        self.init(reach: reach, token: token, directory: try table.string("directory", example: "\"/home/me/project\""),
                  codex: try table.string("codex", example: "\"/home/me/.local/bin/codex\"") ?? "codex")
    }
}
