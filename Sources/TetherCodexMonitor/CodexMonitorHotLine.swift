import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// The lines a busy CodexMonitor stream is made of — an `app-server-event` carrying an item's
/// delta or the `item/started` that opens it — read with `JSONScanner` straight from their bytes
/// when `--raw` is not asked for: the envelope's workspace here, the inner message by
/// ``CodexHotMessage/Reading``. Anything else, or anything unexpected in one of these, reads as
/// nil and the line is parsed whole as before; the events are the same either way
/// (`CodexMonitorHotLineTests` holds the two side by side).
struct CodexMonitorHotLine: Sendable, Equatable {
    /// The workspace whose app-server sent it.
    var workspace: String
    var message: CodexHotMessage

    /// The words on nearly every line of a busy stream (the envelope's method and the delta
    /// methods), with which a reader's `JSONStringTable` starts each batch.
    static let busyWords = ["app-server-event"] + CodexHotMessage.deltaMethods

    /// `line`: one daemon line, without its newline. nil when it is not a hot line as the daemon
    /// sends one — including one that only the parser reads right: keys in their other spelling
    /// (`thread_id`, `workspaceId`, …), escaped or repeated keys, a request (`id`), a field of
    /// another JSON type.
    static func read(_ line: [UInt8], strings: JSONStringTable?) -> CodexMonitorHotLine? {
        JSONScanner.read(line, strings: strings) { scanner throws(JSONScanner.Error) -> CodexMonitorHotLine? in
            var reading = Reading()
            return try reading.line(&scanner) ? reading.hotLine : nil
        }
    }

    /// What the walk found. Each object is walked at most once: the parser's tree keeps a
    /// repeated key's first value, and the walk would read the fields of the second too.
    private struct Reading {
        var outer: String?
        var workspace: String?
        var inner = CodexHotMessage.Reading()
        var sawParams = false
        var sawMessage = false

        var hotLine: CodexMonitorHotLine? {
            guard outer == "app-server-event", let workspace, let message = inner.read else { return nil }
            return CodexMonitorHotLine(workspace: workspace, message: message)
        }

        /// `{"method":"app-server-event","params":{"workspace_id":…,"message":{"method":…,"params":{…}}}}`
        mutating func line(_ scanner: inout JSONScanner) throws(JSONScanner.Error) -> Bool {
            try scanner.members { key, scanner throws(JSONScanner.Error) -> Bool in
                if key == "method" {
                    guard try scanner.string(into: &outer) else { return false }
                    return outer == "app-server-event"
                } else if key == "params" {
                    guard !sawParams else { return false }
                    sawParams = true
                    return try scanner.members { key, scanner throws(JSONScanner.Error) -> Bool in
                        if key == "workspace_id" { return try scanner.string(into: &workspace) }
                        if key == "workspaceId" { return false }  // the other spelling: the parser knows which wins
                        if key == "message" {
                            guard !sawMessage else { return false }
                            sawMessage = true
                            return try inner.message(&scanner)
                        }
                        try scanner.skip()
                        return true
                    }
                } else if key == "id" {
                    return false  // a response, or a request of the daemon's
                }
                try scanner.skip()
                return true
            }
        }
    }
}
