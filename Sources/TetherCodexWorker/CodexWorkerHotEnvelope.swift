import TetherCore
import TetherStreaming

/// The envelopes a busy job's event stream is made of — an item delta, and the `item.started`
/// that opens each item — read with `JSONScanner` straight from their bytes when `--raw` is not
/// asked for: a delta never becomes a tree, and of an `item.started` only the item does.
/// Anything else, or anything unexpected in one of these (escaped or repeated keys, a field of
/// another JSON type), reads as nil and the envelope is parsed whole as before; the events are
/// the same either way (`CodexWorkerHotEnvelopeTests` holds the two side by side).
enum CodexWorkerHotEnvelope: Sendable, Equatable {
    case delta(CodexWorkerDelta)
    case itemStarted(CodexWorkerItemStart)

    /// The envelope types of a busy stream, with which the follower's `JSONStringTable` starts
    /// each batch (`item.started` is short enough to be stored inline).
    static let busyWords = ["item.agentMessage.delta", "item.commandExecution.outputDelta", "item.fileChange.outputDelta"]

    /// The envelope's seq (per job), when it has one.
    var seq: Int64? {
        switch self {
        case .delta(let delta): delta.seq
        case .itemStarted(let start): start.seq
        }
    }

    /// `data`: one SSE `data` payload, `{type, ts, jobId, seq, payload: {threadId, …}}`.
    static func read(_ data: [UInt8], strings: JSONStringTable?) -> CodexWorkerHotEnvelope? {
        JSONScanner.read(data, strings: strings) { scanner throws(JSONScanner.Error) -> CodexWorkerHotEnvelope? in
            var read = Reading()
            try read.envelope(&scanner)
            return read.giveUp ? nil : read.hotEnvelope
        }
    }

    private struct Reading {
        var type: String?
        var job: String?
        var seq: Int64?
        var sawSeq = false
        var sawPayload = false
        var thread: String?
        var itemID: String?
        var delta: String?
        var item: JSONValue?
        var giveUp = false

        var hotEnvelope: CodexWorkerHotEnvelope? {
            guard let type, let job else { return nil }
            if CodexWorkerDelta.kind(ofType: type) != nil {
                return .delta(CodexWorkerDelta(type: type, job: job, seq: seq, thread: thread, item: itemID, delta: delta))
            }
            guard type == "item.started", let item else { return nil }
            return .itemStarted(CodexWorkerItemStart(job: job, seq: seq, thread: thread, item: item))
        }

        /// The delta types first: they are most of a busy stream.
        static func isHot(_ type: String) -> Bool { CodexWorkerDelta.kind(ofType: type) != nil || type == "item.started" }

        mutating func envelope(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                var read = true
                if key == "type" {
                    read = try scanner.string(into: &type)
                    if let type, !Self.isHot(type) { giveUp = true }
                } else if key == "jobId" {
                    read = try scanner.string(into: &job)
                } else if key == "seq" {
                    guard !sawSeq, scanner.kind == .number else { giveUp = true; return }
                    sawSeq = true
                    seq = try scanner.int()
                    read = seq != nil  // a fraction or out of range: left to the parser
                } else if key == "payload" {
                    guard !sawPayload, scanner.kind == .object else { giveUp = true; return }
                    sawPayload = true
                    try payload(&scanner)
                } else {
                    try scanner.skip()
                }
                if !read { giveUp = true }
                if giveUp { return }
            }
        }

        /// Read for both kinds of envelope: its `type` may come after it.
        private mutating func payload(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                var read = true
                if key == "threadId" {
                    read = try scanner.string(into: &thread)
                } else if key == "itemId" {
                    read = try scanner.string(into: &itemID)
                } else if key == "delta" {
                    read = try scanner.string(into: &delta)
                } else if key == "item" {
                    // Any JSON: the mapper reads it as the parsed envelope's would be read.
                    read = item == nil  // repeated: the tree keeps the first
                    if read { item = try scanner.value() }
                } else {
                    try scanner.skip()
                }
                if !read { giveUp = true }
                if giveUp { return }
            }
        }
    }
}

/// An `item.started` envelope read straight from its bytes (`CodexWorkerHotEnvelope`): the item
/// whole, and the envelope fields every envelope is admitted by.
struct CodexWorkerItemStart: Sendable, Equatable {
    var job: String
    var seq: Int64?
    var thread: String?
    var item: JSONValue
}
