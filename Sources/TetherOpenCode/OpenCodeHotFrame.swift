import TetherCore
import TetherStreaming

/// The frames a busy OpenCode stream is made of — `message.part.delta`, and
/// `message.part.updated` of a text or reasoning part — read with `JSONScanner` straight from
/// their bytes into an `OpenCodeWireEvent`, without the tree `JSONParser` would build and the
/// mapper would read a handful of fields from. Anything else, or anything unexpected in one of
/// these (another part type, a key spelled with escapes, a repeated key, a field of another
/// JSON type), reads as nil, and the stream parses the frame whole as before; the result is the
/// same either way (`OpenCodeHotFrameTests` holds the two side by side).
enum OpenCodeHotFrame {
    static func read(_ data: [UInt8], strings: JSONStringTable?) -> OpenCodeWireEvent? {
        JSONScanner.read(data, strings: strings) { scanner throws(JSONScanner.Error) -> OpenCodeWireEvent? in
            var frame = Frame()
            try frame.readTop(&scanner)
            return frame.giveUp ? nil : frame.takeEvent()
        }
    }

    /// The hot types, with which the stream's `JSONStringTable` starts each batch.
    static let busyWords = [HotType.partDelta.rawValue, HotType.partUpdated.rawValue]

    /// A payload `type` read here, told apart once, when it is read (a String compare with a
    /// literal of another spelling costs a call into the runtime; this was several a frame).
    private enum HotType: String {
        case partDelta = "message.part.delta"
        case partUpdated = "message.part.updated"
    }

    /// What the walk found: the envelope's fields, then the payload's (bare on `/event`).
    private struct Frame {
        var directory: String?
        var sawPayload = false
        var payload = Payload()
        var giveUp = false

        /// What was found, its strings moved out of the walk's fields (`take()`), not copied
        /// from them: a copy was a retain now and a release when the walk's fields went.
        mutating func takeEvent() -> OpenCodeWireEvent? {
            guard let type = payload.type.take() else { return nil }
            switch payload.hotType {
            case .partDelta:
                guard let session = payload.session.take(), let part = payload.partID.take(), let delta = payload.delta.take()
                else { return nil }
                let read = OpenCodePartDelta(session: session, message: payload.message.take(), part: part,
                                             field: payload.field.take(), delta: delta)
                return OpenCodeWireEvent(type: type, directory: directory.take(), body: .partDelta(read), raw: nil)
            case .partUpdated:
                guard var part = payload.part.take(), let snapshot = part.takeSnapshot() else { return nil }
                return OpenCodeWireEvent(type: type, directory: directory.take(), body: .partUpdated(snapshot, delta: payload.delta.take()),
                                         raw: nil)
            case nil:
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
                    if try !scanner.string(into: &directory) { giveUp = true }
                } else if !sawPayload, key == "type" || key == "properties" {
                    try payload.readMember(key, &scanner)
                } else {
                    try scanner.skip()
                }
                if payload.giveUp { giveUp = true }
                // Not a frame read here: stop walking, the parser will read it.
                if payload.type != nil, payload.hotType == nil { giveUp = true }
                if giveUp { return }
            }
        }
    }

    private struct Payload {
        var type: String?
        /// `type`, when it is one read here.
        var hotType: HotType?
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
                if try !scanner.string(into: &type) { giveUp = true }
                hotType = type.flatMap(HotType.init(rawValue:))
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
            var read = true
            if key == "part" {
                guard part == nil, scanner.kind == .object else { giveUp = true; return }
                var found = Part()
                try found.read(&scanner)
                if found.giveUp { giveUp = true; return }
                part = found
            } else if key == "sessionID" {
                read = try scanner.string(into: &session)
            } else if key == "messageID" {
                read = try scanner.string(into: &message)
            } else if key == "partID" {
                read = try scanner.string(into: &partID)
            } else if key == "field" {
                read = try scanner.string(into: &field)
            } else if key == "delta" {
                read = try scanner.string(into: &delta)
            } else {
                try scanner.skip()
            }
            if !read { giveUp = true }
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

        mutating func takeSnapshot() -> OpenCodePartSnapshot? {
            guard let id = id.take(), let session = session.take(), let message = message.take(), let type = type.take() else { return nil }
            let kind: PartKind
            switch type {
            case "text": kind = .text
            case "reasoning": kind = .reasoning
            default: return nil
            }
            return OpenCodePartSnapshot(id: id, session: session, message: message, kind: kind, isFinal: ended ?? false,
                                        body: .text(text.take() ?? "", synthetic: synthetic ?? false))
        }

        mutating func read(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                var read = true
                if key == "id" {
                    read = try scanner.string(into: &id)
                } else if key == "sessionID" {
                    read = try scanner.string(into: &session)
                } else if key == "messageID" {
                    read = try scanner.string(into: &message)
                } else if key == "type" {
                    read = try scanner.string(into: &type)
                    if let type, type != "text", type != "reasoning" { giveUp = true }
                } else if key == "text" {
                    read = try scanner.string(into: &text)
                } else if key == "synthetic" {
                    guard synthetic == nil else { giveUp = true; return }
                    synthetic = try scanner.bool() ?? false  // the parser's `bool == true`
                } else if key == "time" {
                    guard ended == nil, scanner.kind == .object else { giveUp = true; return }
                    ended = try Self.readEnd(&scanner)
                } else {
                    try scanner.skip()
                }
                if !read { giveUp = true }
                if giveUp { return }
            }
        }

        /// `time`: whether its first `end` is set (not null), as the parser's tree reads it.
        private static func readEnd(_ scanner: inout JSONScanner) throws(JSONScanner.Error) -> Bool {
            var ended: Bool?
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "end", ended == nil { ended = try !scanner.skipIsNull() } else { try scanner.skip() }
            }
            return ended ?? false
        }
    }
}
