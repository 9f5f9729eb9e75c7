import TetherCore

/// A streamed piece of an item (`item.agentMessage.delta`, `item.commandExecution.outputDelta`,
/// `item.fileChange.outputDelta`): what a busy job's event stream is made of. Read straight
/// from the envelope's bytes with `JSONScanner` when `--raw` is not asked for, so that it never
/// becomes a tree; anything unexpected reads as nil, and the envelope is parsed whole as before.
struct CodexWorkerDelta: Sendable, Equatable {
    var type: String
    var job: String
    var seq: Int64?
    var thread: String?
    var item: String?
    var delta: String?

    /// The envelope types of a busy stream, with which the follower's `JSONStringTable` starts
    /// each batch.
    static let busyWords = ["item.agentMessage.delta", "item.commandExecution.outputDelta", "item.fileChange.outputDelta"]

    /// The delta envelope types: the kind of part each extends.
    static func kind(ofType type: String) -> PartKind? {
        switch type {
        case "item.agentMessage.delta": return .text
        case "item.commandExecution.outputDelta": return .command
        case "item.fileChange.outputDelta": return .fileChange
        default: return nil
        }
    }

    /// `data`: one SSE `data` payload, `{type, ts, jobId, seq, payload: {threadId, itemId, delta}}`.
    /// nil when it is not a delta envelope, or one only the parser reads right (escaped or
    /// repeated keys, a field of another JSON type).
    static func read(_ data: [UInt8], strings: JSONStringTable?) -> CodexWorkerDelta? {
        JSONScanner.read(data, strings: strings) { scanner throws(JSONScanner.Error) -> CodexWorkerDelta? in
            var read = Reading()
            try read.envelope(&scanner)
            guard !read.giveUp, let type = read.type, kind(ofType: type) != nil, let job = read.job else { return nil }
            return CodexWorkerDelta(type: type, job: job, seq: read.seq, thread: read.thread, item: read.item, delta: read.delta)
        }
    }

    private struct Reading {
        var type: String?
        var job: String?
        var seq: Int64?
        var sawSeq = false
        var sawPayload = false
        var thread: String?
        var item: String?
        var delta: String?
        var giveUp = false

        mutating func envelope(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                var read = true
                if key == "type" {
                    read = try scanner.string(into: &type)
                    if let type, CodexWorkerDelta.kind(ofType: type) == nil { giveUp = true }
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

        private mutating func payload(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                var read = true
                if key == "threadId" {
                    read = try scanner.string(into: &thread)
                } else if key == "itemId" {
                    read = try scanner.string(into: &item)
                } else if key == "delta" {
                    read = try scanner.string(into: &delta)
                } else {
                    try scanner.skip()
                }
                if !read { giveUp = true }
                if giveUp { return }
            }
        }
    }
}
