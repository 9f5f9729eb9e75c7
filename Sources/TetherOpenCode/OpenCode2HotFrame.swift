import TetherCore
import TetherStreaming

/// A text or reasoning delta of OpenCode 2.x (`session.text.delta`, `session.reasoning.delta`
/// on `/api/event`): what the mapper takes from the frame, and all it takes.
struct OpenCode2TextDelta: Sendable, Equatable {
    var kind: PartKind
    /// `data.sessionID`.
    var session: String
    /// `data.assistantMessageID`; with `ordinal`, the part (`OpenCode2Facts.partID`).
    var message: String
    var ordinal: Int
    var delta: String
    /// The envelope's `created` (the server's clock, ms since the epoch).
    var created: Int?
}

/// The frame a busy 2.x stream is made of — a text or reasoning delta, most of a turn's frames —
/// read with `JSONScanner` straight from its bytes, without the three objects (`data`,
/// `location`, the envelope) `JSONParser` would build and the mapper would read four fields of.
/// Anything else, or anything unusual in one of these (durable, a repeated or escaped key, a
/// field of another JSON type, a field missing), reads as nil, and the stream decodes the frame
/// whole as before; the result is the same either way (`OpenCode2HotFrameTests` holds the two
/// side by side). For a stream that keeps no `raw` (which needs the tree).
enum OpenCode2HotFrame {
    static func read(_ data: [UInt8]) -> OpenCode2TextDelta? {
        JSONScanner.read(data) { scanner throws(JSONScanner.Error) -> OpenCode2TextDelta? in
            var frame = Frame()
            try frame.read(&scanner)
            return frame.giveUp ? nil : frame.textDelta()
        }
    }

    private struct Frame {
        var kind: PartKind?
        var sawType = false
        var sawCreated = false
        var created: Int?
        var sawData = false
        var session: String?
        var message: String?
        var ordinal: Int?
        var delta: String?
        var giveUp = false

        func textDelta() -> OpenCode2TextDelta? {
            guard let kind, let session, let message, let ordinal, let delta else { return nil }
            return OpenCode2TextDelta(kind: kind, session: session, message: message, ordinal: ordinal, delta: delta,
                                      created: created)
        }

        mutating func read(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "type" {
                    guard !sawType else { giveUp = true; return }
                    sawType = true
                    switch try scanner.string() {
                    case "session.text.delta": kind = .text
                    case "session.reasoning.delta": kind = .reasoning
                    default: giveUp = true  // not a frame read here
                    }
                } else if key == "data" {
                    guard !sawData, scanner.kind == .object else { giveUp = true; return }
                    sawData = true
                    try readData(&scanner)
                } else if key == "created" {
                    guard !sawCreated else { giveUp = true; return }
                    sawCreated = true
                    created = try scanner.int().map(Int.init)  // the tree's `.int`: nil if not one
                } else if key == "durable" {
                    // A durable frame has a seq, a gap rule and a cursor: the whole decoder's.
                    if try !scanner.skipIsNull() { giveUp = true }
                } else {
                    try scanner.skip()
                }
                if giveUp { return }
            }
        }

        private mutating func readData(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                var read = true
                if key == "sessionID" {
                    read = try scanner.string(into: &session)
                } else if key == "assistantMessageID" {
                    read = try scanner.string(into: &message)
                } else if key == "delta" {
                    read = try scanner.string(into: &delta)
                } else if key == "ordinal" {
                    guard ordinal == nil, scanner.kind == .number, let number = try scanner.int() else { giveUp = true; return }
                    ordinal = Int(number)
                } else {
                    try scanner.skip()
                }
                if !read { giveUp = true; return }
            }
        }
    }
}
