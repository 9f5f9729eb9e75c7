import TetherCore

/// A streamed piece of an item (`item/agentMessage/delta`, `item/commandExecution/outputDelta`,
/// …) inside an `app-server-event`: what a busy CodexMonitor stream is made of. Read straight
/// from the line's bytes with `JSONScanner` when `--raw` is not asked for, so that it never
/// becomes a tree; anything unexpected reads as nil, and the line is parsed whole as before.
struct CodexMonitorDelta: Sendable, Equatable {
    var workspace: String
    /// The app-server method: it says the part's kind and the field the delta extends.
    var method: String
    var thread: String?
    var turn: String?
    var item: String?
    var delta: String

    /// The words on nearly every line of a busy stream (the envelope's method and the delta
    /// methods), with which a reader's `JSONStringTable` starts each batch.
    static let busyWords = [
        "app-server-event", "item/agentMessage/delta", "item/reasoning/summaryTextDelta", "item/reasoning/textDelta",
        "item/commandExecution/outputDelta", "item/fileChange/outputDelta",
    ]

    /// The delta methods: the kind of part each extends, and which of its fields.
    static func target(ofMethod method: String) -> (kind: PartKind, field: String)? {
        switch method {
        case "item/agentMessage/delta": return (.text, "text")
        case "item/plan/delta": return (.plan, "text")
        case "item/reasoning/summaryTextDelta", "item/reasoning/textDelta": return (.reasoning, "text")
        case "item/commandExecution/outputDelta": return (.command, "output")
        case "item/fileChange/outputDelta": return (.fileChange, "output")
        default: return nil
        }
    }

    /// `line`: one daemon line, without its newline. nil when it is not a delta as the daemon
    /// sends one — including one that only the parser reads right: keys in their other spelling
    /// (`thread_id`, `workspaceId`, …), escaped or repeated keys, a request (`id`), a field of
    /// another JSON type.
    static func read(_ line: [UInt8], strings: JSONStringTable?) -> CodexMonitorDelta? {
        JSONScanner.read(line, strings: strings) { scanner throws(JSONScanner.Error) -> CodexMonitorDelta? in
            var read = Reading()
            try read.line(&scanner)
            guard !read.giveUp, read.outer == "app-server-event", let workspace = read.workspace, let method = read.method,
                  target(ofMethod: method) != nil, let delta = read.delta else { return nil }
            return CodexMonitorDelta(workspace: workspace, method: method, thread: read.thread, turn: read.turn, item: read.item,
                                     delta: delta)
        }
    }

    private struct Reading {
        var outer: String?
        var workspace: String?
        var method: String?
        var thread: String?
        var turn: String?
        var item: String?
        var delta: String?
        var giveUp = false

        /// `{"method":"app-server-event","params":{"workspace_id":…,"message":{"method":…,"params":{…}}}}`
        mutating func line(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "method" {
                    if try !scanner.string(into: &outer) { giveUp = true }
                    if let outer, outer != "app-server-event" { giveUp = true }
                } else if key == "params" {
                    try object(&scanner) { reading, key, scanner throws(JSONScanner.Error) in
                        if key == "workspace_id" {
                            if try !scanner.string(into: &reading.workspace) { reading.giveUp = true }
                        } else if key == "workspaceId" {
                            reading.giveUp = true  // the other spelling: the parser knows which wins
                        } else if key == "message" {
                            try reading.message(&scanner)
                        } else {
                            try scanner.skip()
                        }
                    }
                } else if key == "id" {
                    giveUp = true  // a response, or a request of the daemon's
                } else {
                    try scanner.skip()
                }
                if giveUp { return }
            }
        }

        private mutating func message(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try object(&scanner) { reading, key, scanner throws(JSONScanner.Error) in
                if key == "method" {
                    if try !scanner.string(into: &reading.method) { reading.giveUp = true }
                    if let method = reading.method, CodexMonitorDelta.target(ofMethod: method) == nil { reading.giveUp = true }
                } else if key == "params" {
                    try reading.object(&scanner) { reading, key, scanner throws(JSONScanner.Error) in
                        if key == "threadId" {
                            if try !scanner.string(into: &reading.thread) { reading.giveUp = true }
                        } else if key == "turnId" {
                            if try !scanner.string(into: &reading.turn) { reading.giveUp = true }
                        } else if key == "itemId" {
                            if try !scanner.string(into: &reading.item) { reading.giveUp = true }
                        } else if key == "delta" {
                            if try !scanner.string(into: &reading.delta) { reading.giveUp = true }
                        } else if key == "thread_id" || key == "turn_id" || key == "item_id" {
                            reading.giveUp = true
                        } else {
                            try scanner.skip()
                        }
                    }
                } else if key == "id" {
                    reading.giveUp = true  // an app-server request (an approval), not a notification
                } else {
                    try scanner.skip()
                }
            }
        }

        /// Walks the object about to be read, member by member, until it ends or the read gives up.
        private mutating func object(_ scanner: inout JSONScanner,
                                     _ member: (inout Reading, JSONKey, inout JSONScanner) throws(JSONScanner.Error) -> Void)
            throws(JSONScanner.Error) {
            guard scanner.kind == .object else {
                giveUp = true
                return
            }
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                try member(&self, key, &scanner)
                if giveUp { return }
            }
        }
    }
}
