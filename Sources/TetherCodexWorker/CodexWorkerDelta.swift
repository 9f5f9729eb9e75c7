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
        var read = Reading()
        do {
            try JSONScanner.scan(data, strings: strings) { scanner throws(JSONScanner.Error) in
                read.envelope(&scanner)
                if scanner.sawEscapedKey { read.giveUp = true }
                if read.giveUp { scanner.abandon() }
            }
        } catch {
            return nil
        }
        guard !read.giveUp, let type = read.type, kind(ofType: type) != nil, let job = read.job else { return nil }
        return CodexWorkerDelta(type: type, job: job, seq: read.seq, thread: read.thread, item: read.item, delta: read.delta)
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

        mutating func envelope(_ scanner: inout JSONScanner) {
            do {
                try scanner.enterObject()
                while let key = try scanner.nextKey(), !giveUp {
                    if key == "type" {
                        if !Self.read(&type, &scanner) { giveUp = true }
                        if let type, CodexWorkerDelta.kind(ofType: type) == nil { giveUp = true }
                    } else if key == "jobId" {
                        if !Self.read(&job, &scanner) { giveUp = true }
                    } else if key == "seq" {
                        guard !sawSeq, scanner.kind == .number else { giveUp = true; continue }
                        sawSeq = true
                        seq = try scanner.int()
                        if seq == nil { giveUp = true }  // a fraction or out of range: left to the parser
                    } else if key == "payload" {
                        guard !sawPayload, scanner.kind == .object else { giveUp = true; continue }
                        sawPayload = true
                        try scanner.enterObject()
                        while let key = try scanner.nextKey(), !giveUp {
                            if key == "threadId" {
                                if !Self.read(&thread, &scanner) { giveUp = true }
                            } else if key == "itemId" {
                                if !Self.read(&item, &scanner) { giveUp = true }
                            } else if key == "delta" {
                                if !Self.read(&delta, &scanner) { giveUp = true }
                            } else {
                                try scanner.skip()
                            }
                        }
                    } else {
                        try scanner.skip()
                    }
                }
            } catch {
                giveUp = true
            }
        }

        /// A string member, read once; a repeated key or another JSON type (false) gives up
        /// (the parser keeps the first, and reads a non-string as absent).
        static func read(_ slot: inout String?, _ scanner: inout JSONScanner) -> Bool {
            guard slot == nil, scanner.kind == .string, let value = try? scanner.string() else { return false }
            slot = value
            return true
        }
    }
}
