import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// What the CodexMonitor daemon adds around the app-server's messages: its own notifications
/// (`app-server-event` carries a raw app-server message of a workspace; `terminal-*`), and the
/// lines read straight from their bytes (`CodexMonitorHotLine`). The app-server messages
/// themselves are ``CodexAppServerMapper``'s, with the workspace as their scope.
extension CodexAppServerMapper {
    mutating func map(method: String, params: JSONValue) -> [Event] {
        switch method {
        case "app-server-event":
            // `workspace_id` is snake_case here (and nowhere else); accept camelCase too.
            guard let workspace = Self.string(params, "workspace_id", "workspaceId"), let message = params["message"] else { return [] }
            return map(scope: workspace, message: message)
        case "terminal-output":
            return [Event(.terminalOutput, data: .compact([
                "workspace": JSONValue(Self.string(params, "workspaceId", "workspace_id")),
                "terminal": JSONValue(Self.string(params, "terminalId", "terminal_id")),
                "data": JSONValue(params["data"]?.string),
            ]))]
        case "terminal-exit":
            var data = JSONObject.compact([
                "workspace": JSONValue(Self.string(params, "workspaceId", "workspace_id")),
                "terminal": JSONValue(Self.string(params, "terminalId", "terminal_id")),
            ])
            if let code = params["exitCode"]?.int ?? params["code"]?.int { data["code"] = .int(code) }
            return [Event(.terminalExit, data: data)]
        default:
            return []
        }
    }

    /// A line read straight from its bytes (`CodexMonitorHotLine.read`): the same events as the
    /// `app-server-event` it came in, parsed.
    mutating func map(_ hot: CodexMonitorHotLine) -> [Event] {
        map(scope: hot.workspace, hot: hot.message)
    }
}
