import TetherCodexProtocol
import TetherCore

/// The lines a busy CodexMonitor stream is made of — an item delta, and the `item/started` that
/// opens each item — read with `JSONScanner` straight from their bytes when `--raw` is not asked
/// for: a delta never becomes a tree, and of an `item/started` only the item does (the mapper
/// keeps it for the part). Anything else, or anything unexpected in one of these, reads as nil
/// and the line is parsed whole as before; the events are the same either way
/// (`CodexMonitorHotLineTests` holds the two side by side).
enum CodexMonitorHotLine: Sendable, Equatable {
    case delta(CodexMonitorDelta)
    case itemStarted(CodexMonitorItemStart)

    /// The words on nearly every line of a busy stream (the envelope's method and the delta
    /// methods; `item/started` is short enough to be stored inline), with which a reader's
    /// `JSONStringTable` starts each batch.
    static let busyWords = [
        "app-server-event", "item/agentMessage/delta", "item/reasoning/summaryTextDelta", "item/reasoning/textDelta",
        "item/commandExecution/outputDelta", "item/fileChange/outputDelta",
    ]

    /// The workspace whose app-server sent it.
    var workspace: String {
        switch self {
        case .delta(let delta): delta.workspace
        case .itemStarted(let start): start.workspace
        }
    }

    /// `line`: one daemon line, without its newline. nil when it is not a hot line as the daemon
    /// sends one — including one that only the parser reads right: keys in their other spelling
    /// (`thread_id`, `workspaceId`, …), escaped or repeated keys, a request (`id`), a field of
    /// another JSON type.
    static func read(_ line: [UInt8], strings: JSONStringTable?) -> CodexMonitorHotLine? {
        JSONScanner.read(line, strings: strings) { scanner throws(JSONScanner.Error) -> CodexMonitorHotLine? in
            var read = Reading()
            try read.line(&scanner)
            return read.giveUp ? nil : read.hotLine
        }
    }

    /// What the walk found. The inner message's keys may come in any order, so its `params` are
    /// read for both kinds of line before its `method` may have said which this is.
    private struct Reading {
        var outer: String?
        var workspace: String?
        var method: String?
        var thread: String?
        var turn: String?
        var itemID: String?
        var delta: String?
        var item: JSONValue?
        /// The objects walked, each at most once: the parser's tree keeps a repeated key's first
        /// value, and the walk would read the fields of the second too.
        var sawParams = false
        var sawMessage = false
        var sawMessageParams = false
        var giveUp = false

        var hotLine: CodexMonitorHotLine? {
            guard outer == "app-server-event", let workspace, let method else { return nil }
            if method == "item/started" {
                guard let item else { return nil }
                return .itemStarted(CodexMonitorItemStart(workspace: workspace, thread: thread, turn: turn, item: item))
            }
            guard CodexItemDelta.target(ofMethod: method) != nil, let delta else { return nil }
            return .delta(CodexMonitorDelta(workspace: workspace, method: method, thread: thread, turn: turn, item: itemID, delta: delta))
        }

        static func isHot(_ method: String) -> Bool {
            method == "item/started" || CodexItemDelta.target(ofMethod: method) != nil
        }

        /// `{"method":"app-server-event","params":{"workspace_id":…,"message":{"method":…,"params":{…}}}}`
        mutating func line(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "method" {
                    if try !scanner.string(into: &outer) { giveUp = true }
                    if let outer, outer != "app-server-event" { giveUp = true }
                } else if key == "params" {
                    guard !sawParams else { giveUp = true; return }
                    sawParams = true
                    try object(&scanner) { reading, key, scanner throws(JSONScanner.Error) in
                        if key == "workspace_id" {
                            if try !scanner.string(into: &reading.workspace) { reading.giveUp = true }
                        } else if key == "workspaceId" {
                            reading.giveUp = true  // the other spelling: the parser knows which wins
                        } else if key == "message" {
                            guard !reading.sawMessage else { reading.giveUp = true; return }
                            reading.sawMessage = true
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
                    if let method = reading.method, !Self.isHot(method) { reading.giveUp = true }
                } else if key == "params" {
                    guard !reading.sawMessageParams else { reading.giveUp = true; return }
                    reading.sawMessageParams = true
                    try reading.object(&scanner) { reading, key, scanner throws(JSONScanner.Error) in
                        if key == "threadId" {
                            if try !scanner.string(into: &reading.thread) { reading.giveUp = true }
                        } else if key == "turnId" {
                            if try !scanner.string(into: &reading.turn) { reading.giveUp = true }
                        } else if key == "itemId" {
                            if try !scanner.string(into: &reading.itemID) { reading.giveUp = true }
                        } else if key == "delta" {
                            if try !scanner.string(into: &reading.delta) { reading.giveUp = true }
                        } else if key == "item" {
                            // Any JSON: the mapper reads it as the parsed line's would be read.
                            guard reading.item == nil else {
                                reading.giveUp = true  // repeated: the tree keeps the first
                                return
                            }
                            reading.item = try scanner.value()
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

/// `item/started` inside an `app-server-event`, read straight from its line
/// (`CodexMonitorHotLine`): the item whole, and where it belongs.
struct CodexMonitorItemStart: Sendable, Equatable {
    var workspace: String
    var thread: String?
    var turn: String?
    var item: JSONValue
}
