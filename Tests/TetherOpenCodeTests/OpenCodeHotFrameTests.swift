import Testing
import TetherTestSupport
import TetherCore
@testable import TetherOpenCode

/// The frames read straight from their bytes (`OpenCodeHotFrame`, used when `--raw` is not
/// asked for) must mean exactly what the same frames parsed whole mean.
@Suite struct OpenCodeHotFrameTests {
    static let session = "ses_fe1d0c3a2b11Qm8xT2aLk9pQ1z"

    static func global(_ payload: String, directory: String = "/home/dev/demo") -> String {
        #"{"directory":"\#(directory)","project":"4b0ea68d7af9a6031a7ffda7ad66e0cb83315750","payload":\#(payload)}"#
    }

    static func textPart(_ id: String, text: String, type: String = "text", end: String? = nil, extra: String = "") -> String {
        let time = end.map { #"{"start":1,"end":\#($0)}"# } ?? #"{"start":1}"#
        return #"{"id":"\#(id)","sessionID":"\#(session)","messageID":"msg_a002","type":"\#(type)","text":"\#(text)","time":\#(time)\#(extra)}"#
    }

    /// A turn in frames of every shape the hot path reads, with ones it must leave to the parser.
    static let frames: [(frame: String, hot: Bool)] = [
        (global(#"{"type":"session.status","properties":{"sessionID":"\#(session)","status":{"type":"busy"}}}"#), false),
        (global(#"{"type":"message.updated","properties":{"info":{"id":"msg_a001","sessionID":"\#(session)","role":"user","time":{"created":1}}}}"#), false),
        (global(#"{"type":"message.updated","properties":{"info":{"id":"msg_a002","sessionID":"\#(session)","role":"assistant","parentID":"msg_a001","time":{"created":2}}}}"#), false),
        // Legacy: snapshot and delta together.
        (global(#"{"type":"message.part.updated","properties":{"part":\#(textPart("prt_1", text: "Hel")),"delta":"Hel"}}"#), true),
        (global(#"{"type":"message.part.updated","properties":{"delta":"lo","part":\#(textPart("prt_1", text: "Hello"))}}"#), true),
        // Keys in another order, an unknown member, escapes in values, non-ASCII.
        (global(#"{"properties":{"part":{"time":{"start":1},"text":"Hello \"w\u00f6rld\"\n","type":"text","messageID":"msg_a002","sessionID":"\#(session)","id":"prt_1","metadata":{"x":[1,2]}}},"type":"message.part.updated"}"#), true),
        // Current API deltas, with and without `field` and `messageID`.
        (global(#"{"type":"message.part.delta","properties":{"sessionID":"\#(session)","messageID":"msg_a002","partID":"prt_2","field":"text","delta":"Thinking"}}"#), true),
        (global(#"{"type":"message.part.delta","properties":{"sessionID":"\#(session)","partID":"prt_2","delta":" more"}}"#), true),
        (global(#"{"type":"message.part.delta","properties":{"sessionID":"\#(session)","partID":"prt_2","field":"other","delta":"!"}}"#), true),
        // Reasoning, synthetic, final.
        (global(#"{"type":"message.part.updated","properties":{"part":\#(textPart("prt_3", text: "why", type: "reasoning"))}}"#), true),
        (global(#"{"type":"message.part.updated","properties":{"part":\#(textPart("prt_4", text: "note", extra: #","synthetic":true"#))}}"#), true),
        (global(#"{"type":"message.part.updated","properties":{"part":\#(textPart("prt_3", text: "why not", type: "reasoning", end: "5"))}}"#), true),
        (global(#"{"type":"message.part.updated","properties":{"part":\#(textPart("prt_1", text: "Hello world", end: "6"))}}"#), true),
        // `/event`: the payload bare.
        (#"{"type":"message.part.delta","properties":{"sessionID":"\#(session)","partID":"prt_5","delta":"bare"}}"#, true),
        // Left to the parser: a tool part, a key spelled with an escape, a field of another type,
        // a repeated key, an unknown type.
        (global(#"{"type":"message.part.updated","properties":{"part":{"id":"prt_6","sessionID":"\#(session)","messageID":"msg_a002","type":"tool","tool":"bash","callID":"c1","state":{"status":"running","input":{"command":"ls"}}}}}"#), false),
        (global(#"{"type":"message.part.delta","properties":{"sessionID":"\#(session)","partID":"prt_5","d\u0065lta":"escaped"}}"#), false),
        (global(#"{"type":"message.part.delta","properties":{"sessionID":"\#(session)","partID":"prt_5","delta":7}}"#), false),
        (global(#"{"type":"message.part.delta","properties":{"sessionID":"\#(session)","partID":"prt_5","delta":"one","delta":"two"}}"#), false),
        (global(#"{"type":"message.part.updated","properties":{"part":\#(textPart("prt_7", text: "x", extra: #","synthetic":"yes""#))}}"#), true),
        (global(#"{"type":"lsp.updated","properties":{}}"#), false),
        (global(#"{"type":"session.idle","properties":{"sessionID":"\#(session)"}}"#), false),
    ]

    @Test func theBusyFramesAreReadWithoutATree() {
        for (frame, hot) in Self.frames {
            let read = OpenCodeHotFrame.read(Array(frame.utf8), strings: nil)
            #expect((read != nil) == hot, "\(frame)")
            #expect(read?.raw == nil)
        }
    }

    @Test func readWithoutATreeTheEventsAreTheSame() throws {
        var whole = OpenCodeWireDecoder()
        var read = OpenCodeWireDecoder(keepingRaw: false)
        var all: [Event] = []
        for (frame, _) in Self.frames {
            let wholeEvents = whole.events(fromEventData: frame)
            let readEvents = read.events(fromEventData: frame)
            let expected = try #require(wholeEvents)
            let got = try #require(readEvents)
            // Equal but for `raw`, and the receive time (each decoder stamps its own).
            #expect(got.stamped(at: 0) == expected.withoutRaw.stamped(at: 0), "\(frame)")
            all += got
        }
        // The walk through the turn did produce what it should (a test that reads nothing
        // would pass the comparison above).
        #expect(all.filter { $0.type == .partDelta }.count >= 6)
        #expect(all.filter { $0.type == .partCompleted }.compactMap(\.part).sorted() == ["prt_1", "prt_2", "prt_3", "prt_4", "prt_5", "prt_6", "prt_7"])
        #expect(all.first { $0.type == .partCompleted && $0.part == "prt_1" }?.data["text"] == "Hello world")
        #expect(all.first { $0.type == .partStarted && $0.part == "prt_4" }?.data["synthetic"] == true)
    }

    @Test func aBrokenFrameIsNotReadEitherWay() {
        let frame = Self.global(#"{"type":"message.part.delta","properties":{"sessionID":"s","partID":"p","delta":"x"}}"#)
        let bytes = Array(frame.utf8)
        var whole = OpenCodeWireDecoder()
        var read = OpenCodeWireDecoder(keepingRaw: false)
        for end in 0..<bytes.count {
            let prefix = String(decoding: bytes[..<end], as: UTF8.self)
            #expect(OpenCodeHotFrame.read(Array(bytes[..<end]), strings: nil) == nil)
            let wholeEvents = whole.events(fromEventData: prefix)
            let readEvents = read.events(fromEventData: prefix)
            #expect(wholeEvents == nil)
            #expect(readEvents == nil)
        }
    }

    /// Every busy word keeps a slot of its own in the reader's table: each reads back as the
    /// literal itself, not as a copy (two words in one slot would leave one of them a copy).
    @Test func everyBusyWordReadsBackAsItsLiteral() {
        #expect(wordsNotReadAsTheirLiterals(OpenCodeHotFrame.busyWords).isEmpty)
        // A word the table was not started with is a copy: the check can tell.
        #expect(wordsNotReadAsTheirLiterals(OpenCodeHotFrame.busyWords, vocabulary: []).count == 2 * OpenCodeHotFrame.busyWords.count)
    }
}
