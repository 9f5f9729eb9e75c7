import TetherCore
import TetherStreaming

/// The app-server notifications a busy stream is made of — an item's delta, and the
/// `item/started` that opens each item — read with `JSONScanner` straight from their bytes: a
/// delta never becomes a tree, and of an `item/started` only the item does (the mapper keeps it
/// for the part). Anything else, or anything unexpected in one of these — keys in their other
/// spelling (`thread_id`, …), escaped or repeated keys, a request (`id`), a field of another
/// JSON type — reads as nil, and the message is parsed whole: the events are the same either
/// way (`CodexAppServerMapper.map(scope:hot:)`; the tests hold the two side by side).
///
/// The app-server sends these as its lines or frames (``read(_:strings:)``); CodexMonitor
/// relays them inside its `app-server-event` lines, whose reader walks the inner message with
/// ``Reading``.
public enum CodexHotMessage: Sendable, Equatable {
    /// `method`: which delta (it says the part's kind and the field the delta extends).
    case delta(method: String, thread: String?, turn: String?, item: String?, delta: String)
    case itemStarted(thread: String?, turn: String?, item: JSONValue)

    /// The delta methods, the words on nearly every message of a busy stream (`item/started`
    /// is short enough to be stored inline), with which a reader's `JSONStringTable` starts.
    public static let deltaMethods = [
        "item/agentMessage/delta", "item/reasoning/summaryTextDelta", "item/reasoning/textDelta",
        "item/commandExecution/outputDelta", "item/fileChange/outputDelta",
    ]

    public var thread: String? {
        switch self {
        case .delta(_, let thread, _, _, _), .itemStarted(let thread, _, _): thread
        }
    }

    /// One message, the whole of `bytes`; nil when it is not one of these as the app-server
    /// sends it.
    public static func read(_ bytes: [UInt8], strings: JSONStringTable?) -> CodexHotMessage? {
        JSONScanner.read(bytes, strings: strings) { scanner throws(JSONScanner.Error) -> CodexHotMessage? in
            var reading = Reading()
            return try reading.message(&scanner) ? reading.read : nil
        }
    }

    /// The walk over one message object. Its keys may come in any order, so its `params` are
    /// read for both kinds before its `method` may have said which this is.
    public struct Reading {
        private var method: String?
        private var thread: String?
        private var turn: String?
        private var itemID: String?
        private var delta: String?
        private var item: JSONValue?
        /// `params` was walked: the parser's tree keeps a repeated key's first value, and the
        /// walk would read the fields of the second too.
        private var sawParams = false

        public init() {}

        /// What the walk read, once it is over.
        public var read: CodexHotMessage? {
            guard let method else { return nil }
            if method == "item/started" {
                guard let item else { return nil }
                return .itemStarted(thread: thread, turn: turn, item: item)
            }
            guard CodexItemDelta.target(ofMethod: method) != nil, let delta else { return nil }
            return .delta(method: method, thread: thread, turn: turn, item: itemID, delta: delta)
        }

        /// Walks the message about to be read; false as soon as it is not one of these (the
        /// rest is left unread).
        public mutating func message(_ scanner: inout JSONScanner) throws(JSONScanner.Error) -> Bool {
            try scanner.members { key, scanner throws(JSONScanner.Error) -> Bool in
                if key == "method" {
                    guard try scanner.string(into: &method), let method else { return false }
                    return method == "item/started" || CodexItemDelta.target(ofMethod: method) != nil
                } else if key == "params" {
                    guard !sawParams else { return false }
                    sawParams = true
                    return try scanner.members { key, scanner throws(JSONScanner.Error) -> Bool in try param(key, &scanner) }
                } else if key == "id" {
                    return false  // a request (an approval), not a notification
                }
                try scanner.skip()
                return true
            }
        }

        private mutating func param(_ key: JSONKey, _ scanner: inout JSONScanner) throws(JSONScanner.Error) -> Bool {
            if key == "threadId" { return try scanner.string(into: &thread) }
            if key == "turnId" { return try scanner.string(into: &turn) }
            if key == "itemId" { return try scanner.string(into: &itemID) }
            if key == "delta" { return try scanner.string(into: &delta) }
            if key == "item" {
                // Any JSON: the mapper reads it as the parsed message's would be read.
                guard item == nil else { return false }  // repeated: the tree keeps the first
                item = try scanner.value()
                return true
            }
            if key == "thread_id" || key == "turn_id" || key == "item_id" { return false }
            try scanner.skip()
            return true
        }
    }
}
