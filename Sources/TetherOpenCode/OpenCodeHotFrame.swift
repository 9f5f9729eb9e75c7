import TetherCore

/// The frames a busy OpenCode stream is made of — `message.part.delta`, and
/// `message.part.updated` of a text or reasoning part — read with `JSONScanner` straight from
/// their bytes into an `OpenCodeWireEvent`, without the tree `JSONParser` would build and the
/// mapper would read a handful of fields from. Anything else, or anything unexpected in one of
/// these (another part type, a key spelled with escapes, a field of another JSON type), reads
/// as nil, and the stream parses the frame whole as before; the result is the same either way
/// (`OpenCodeHotFrameTests` holds the two side by side).
enum OpenCodeHotFrame {
    static func read(_ data: [UInt8], strings: JSONStringTable?) -> OpenCodeWireEvent? {
        var frame = Frame()
        do {
            try JSONScanner.scan(data, strings: strings) { scanner throws(JSONScanner.Error) in
                try frame.readTop(&scanner)
                if scanner.sawEscapedKey { frame.giveUp = true }
                if frame.giveUp { scanner.abandon() }
            }
        } catch {
            return nil
        }
        return frame.giveUp ? nil : frame.event
    }

    /// A string member, read once: a repeated key or another JSON type (false) is left to the
    /// parser, which keeps the first and reads a non-string as absent.
    private static func readString(_ slot: inout String?, _ scanner: inout JSONScanner) throws(JSONScanner.Error) -> Bool {
        guard slot == nil, scanner.kind == .string else { return false }
        slot = try scanner.string()
        return true
    }

    /// What the walk found: the envelope's fields, then the payload's (bare on `/event`).
    private struct Frame {
        var directory: String?
        var sawPayload = false
        var payload = Payload()
        var giveUp = false

        var event: OpenCodeWireEvent? {
            guard let type = payload.type else { return nil }
            switch type {
            case "message.part.delta":
                guard let session = payload.session, let part = payload.partID, let delta = payload.delta else { return nil }
                let read = OpenCodePartDelta(session: session, message: payload.message, part: part, field: payload.field, delta: delta)
                return OpenCodeWireEvent(type: type, directory: directory, body: .partDelta(read), raw: nil)
            case "message.part.updated":
                guard let part = payload.part, let snapshot = part.snapshot else { return nil }
                return OpenCodeWireEvent(type: type, directory: directory, body: .partUpdated(snapshot, delta: payload.delta), raw: nil)
            default:
                return nil
            }
        }

        mutating func readTop(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "payload" {
                    guard !sawPayload, scanner.kind == .object else { giveUp = true; return }
                    sawPayload = true
                    payload = Payload()  // a bare payload's fields seen before do not count
                    try payload.read(&scanner)
                } else if key == "directory" {
                    guard directory == nil, scanner.kind == .string else { giveUp = true; return }
                    directory = try scanner.string()
                } else if !sawPayload, key == "type" || key == "properties" {
                    try payload.readMember(key, &scanner)
                } else {
                    try scanner.skip()
                }
                if payload.giveUp { giveUp = true; return }
                // Not a frame read here: stop walking, the parser will read it.
                if let type = payload.type, type != "message.part.delta", type != "message.part.updated" { giveUp = true; return }
            }
        }
    }

    private struct Payload {
        var type: String?
        var sawProperties = false
        var session: String?
        var message: String?
        var partID: String?
        var field: String?
        var delta: String?
        var part: Part?
        var giveUp = false

        mutating func read(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                try readMember(key, &scanner)
                if giveUp { return }
            }
        }

        mutating func readMember(_ key: JSONKey, _ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            if key == "type" {
                guard type == nil, let read = try scanner.string() else { giveUp = true; return }
                type = read
            } else if key == "properties" {
                guard !sawProperties, scanner.kind == .object else { giveUp = true; return }
                sawProperties = true
                try scanner.enterObject()
                while let key = try scanner.nextKey() {
                    try readProperty(key, &scanner)
                    if giveUp { return }
                }
            } else {
                try scanner.skip()
            }
        }

        private mutating func readProperty(_ key: JSONKey, _ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            if key == "part" {
                guard part == nil, scanner.kind == .object else { giveUp = true; return }
                var read = Part()
                try read.read(&scanner)
                if read.giveUp { giveUp = true; return }
                part = read
            } else if key == "sessionID" {
                if try !OpenCodeHotFrame.readString(&session, &scanner) { giveUp = true }
            } else if key == "messageID" {
                if try !OpenCodeHotFrame.readString(&message, &scanner) { giveUp = true }
            } else if key == "partID" {
                if try !OpenCodeHotFrame.readString(&partID, &scanner) { giveUp = true }
            } else if key == "field" {
                if try !OpenCodeHotFrame.readString(&field, &scanner) { giveUp = true }
            } else if key == "delta" {
                if try !OpenCodeHotFrame.readString(&delta, &scanner) { giveUp = true }
            } else {
                try scanner.skip()
            }
        }

    }

    /// A text or reasoning part; any other type gives up.
    private struct Part {
        var id: String?
        var session: String?
        var message: String?
        var type: String?
        var text: String?
        var synthetic: Bool?
        var ended: Bool?
        var giveUp = false

        var snapshot: OpenCodePartSnapshot? {
            guard let id, let session, let message, let type else { return nil }
            let kind: PartKind
            switch type {
            case "text": kind = .text
            case "reasoning": kind = .reasoning
            default: return nil
            }
            return OpenCodePartSnapshot(id: id, session: session, message: message, kind: kind, isFinal: ended ?? false,
                                        body: .text(text ?? "", synthetic: synthetic ?? false))
        }

        mutating func read(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "id" {
                    if try !OpenCodeHotFrame.readString(&id, &scanner) { giveUp = true }
                } else if key == "sessionID" {
                    if try !OpenCodeHotFrame.readString(&session, &scanner) { giveUp = true }
                } else if key == "messageID" {
                    if try !OpenCodeHotFrame.readString(&message, &scanner) { giveUp = true }
                } else if key == "type" {
                    if try !OpenCodeHotFrame.readString(&type, &scanner) { giveUp = true }
                    if let type, type != "text", type != "reasoning" { giveUp = true }
                } else if key == "text" {
                    if try !OpenCodeHotFrame.readString(&text, &scanner) { giveUp = true }
                } else if key == "synthetic" {
                    guard synthetic == nil else { giveUp = true; return }
                    synthetic = try scanner.bool() ?? false  // the parser's `bool == true`
                } else if key == "time" {
                    guard ended == nil, scanner.kind == .object else { giveUp = true; return }
                    ended = false
                    try scanner.enterObject()
                    while let key = try scanner.nextKey() {
                        if key == "end" {
                            ended = try !scanner.skipIsNull()
                            // The first `end` counts, as with the parser; later ones are stepped over.
                            while let _ = try scanner.nextKey() { try scanner.skip() }
                            break
                        }
                        try scanner.skip()
                    }
                } else {
                    try scanner.skip()
                }
                if giveUp { return }
            }
        }
    }
}
