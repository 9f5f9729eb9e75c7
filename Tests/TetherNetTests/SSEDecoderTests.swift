import Testing
import TetherTestSupport
@testable import TetherNet

/// The WHATWG "server-sent events" parsing rules, one table per rule. Every case is decoded
/// three ways — whole, byte by byte, and split in two at every position — and all must agree.
@Suite("SSEDecoder")
struct SSEDecoderTests {
    typealias Output = SSEDecoder.Output

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let input: [UInt8]
        let expected: [Output]
        var emitComments = false
        var maxLineLength = 16 << 20

        var testDescription: String { name }

        init(_ name: String, _ input: String, _ expected: [Output], emitComments: Bool = false, maxLineLength: Int = 16 << 20) {
            self.init(name, bytes: Array(input.utf8), expected, emitComments: emitComments, maxLineLength: maxLineLength)
        }

        init(_ name: String, bytes: [UInt8], _ expected: [Output], emitComments: Bool = false, maxLineLength: Int = 16 << 20) {
            self.name = name
            self.input = bytes
            self.expected = expected
            self.emitComments = emitComments
            self.maxLineLength = maxLineLength
        }

        func makeDecoder() -> SSEDecoder {
            SSEDecoder(emitComments: emitComments, maxLineLength: maxLineLength)
        }
    }

    /// An event output, with the spec's defaults.
    static func event(_ data: String, type: String = "message", id: String = "", retry: Int? = nil) -> Output {
        .event(SSEEvent(type: type, data: data, id: id, retry: retry))
    }

    /// A piece of test input written as text or as raw bytes.
    struct Bytes: ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
        let value: [UInt8]
        init(stringLiteral text: String) { value = Array(text.utf8) }
        init(arrayLiteral bytes: UInt8...) { value = bytes }
    }

    static func bytes(_ parts: Bytes...) -> [UInt8] { parts.flatMap(\.value) }

    static let bom: Bytes = [0xEF, 0xBB, 0xBF]

    /// Decodes `chunks` in order with a fresh decoder, then finishes the stream.
    static func decode(_ chunks: [ArraySlice<UInt8>], with decoder: SSEDecoder) -> [Output] {
        var decoder = decoder
        var outputs: [Output] = []
        for chunk in chunks {
            chunk.withUnsafeBytes { decoder.feed($0) { outputs.append($0) } }
        }
        decoder.finish()
        return outputs
    }

    static func check(_ testCase: Case, sourceLocation: SourceLocation = #_sourceLocation) {
        let input = testCase.input
        let whole = decode([input[...]], with: testCase.makeDecoder())
        #expect(whole == testCase.expected, "whole", sourceLocation: sourceLocation)

        let byteByByte = decode(input.indices.map { input[$0...$0] }, with: testCase.makeDecoder())
        #expect(byteByByte == testCase.expected, "byte by byte", sourceLocation: sourceLocation)

        for split in input.indices.dropFirst() {
            let halves = decode([input[..<split], input[split...]], with: testCase.makeDecoder())
            #expect(halves == testCase.expected, "split at \(split)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Rules

    static let byteOrderMarkCases: [Case] = [
        Case("a BOM at stream start is stripped", bytes: bytes(bom, "data: a\n\n"), [event("a")]),
        Case("a BOM then a blank line", bytes: bytes(bom, "\ndata: a\n\n"), [event("a")]),
        Case("only one BOM is stripped", bytes: bytes(bom, bom, "data: a\n\n"), []),
        Case("a BOM inside a value is data", "data: \u{FEFF}a\n\n", [event("\u{FEFF}a")]),
        Case("a BOM at the start of a later line is not stripped", bytes: bytes("data: a\n\n", bom, "data: b\n\n"), [event("a")]),
        Case("a partial BOM stays in the first line", bytes: bytes([0xEF, 0xBB], "data: a\n\n"), []),
        Case("a partial BOM then a line end", bytes: bytes([0xEF], "\ndata: a\n\n"), [event("a")]),
        Case("a partial BOM then CR", bytes: bytes([0xEF, 0xBB], "\rdata: a\r\r"), [event("a")]),
    ]

    @Test(arguments: byteOrderMarkCases)
    func byteOrderMark(_ testCase: Case) { Self.check(testCase) }

    static let lineEndingCases: [Case] = [
        Case("LF", "data: a\n\n", [event("a")]),
        Case("CR", "data: a\r\r", [event("a")]),
        Case("CRLF", "data: a\r\n\r\n", [event("a")]),
        Case("CRLF is one line end, not a blank line", "data: a\r\ndata: b\r\n\r\n", [event("a\nb")]),
        Case("mixed line ends in one event", "data: a\rdata: b\ndata: c\r\n\n", [event("a\nb\nc")]),
        Case("CR then CRLF: a line, then a blank line", "data: a\r\r\n", [event("a")]),
        Case("LF then CR: a line, then a blank line", "data: a\n\r", [event("a")]),
        Case("CR CR LF LF: two blank lines dispatch once", "data: a\r\r\n\ndata: b\n\n", [event("a"), event("b")]),
        Case("a blank first line dispatches nothing", "\r\n\r\ndata: a\r\n\r\n", [event("a")]),
    ]

    @Test(arguments: lineEndingCases)
    func lineEndings(_ testCase: Case) { Self.check(testCase) }

    /// A CR that ends one chunk and the LF that starts the next are one line end.
    @Test func crAndLFInSeparateChunks() {
        var decoder = SSEDecoder()
        var outputs: [Output] = []
        for chunk in ["data: a\r", "\ndata: b\r", "\n", "\r", "\n"] {
            outputs += decoder.feed(chunk)
        }
        #expect(outputs == [Self.event("a\nb")])
    }

    static let commentCases: [Case] = [
        Case("comments are ignored", ": hello\ndata: a\n\n", [event("a")]),
        Case("comments are reported when asked", ": hello\n", [.comment("hello")], emitComments: true),
        Case("one space is stripped from a comment", ":  two\n", [.comment(" two")], emitComments: true),
        Case("an empty comment", ":\n", [.comment("")], emitComments: true),
        Case("a colon-only line is not a blank line", "data: a\n:\n", []),
        Case("a comment does not split an event", "data: a\n: ping\ndata: b\n\n",
             [.comment("ping"), event("a\nb")], emitComments: true),
        Case("a comment keeps its colons", ":a:b\r", [.comment("a:b")], emitComments: true),
    ]

    @Test(arguments: commentCases)
    func comments(_ testCase: Case) { Self.check(testCase) }

    static let fieldCases: [Case] = [
        Case("a field without a colon has an empty value", "data\n\n", [event("")]),
        Case("an empty value", "data:\n\n", [event("")]),
        Case("no space after the colon", "data:a\n\n", [event("a")]),
        Case("one leading space is stripped", "data: a\n\n", [event("a")]),
        Case("only one leading space is stripped", "data:  a\n\n", [event(" a")]),
        Case("a tab is not stripped", "data:\ta\n\n", [event("\ta")]),
        Case("trailing spaces are kept", "data: a \n\n", [event("a ")]),
        Case("the value keeps later colons", "data: a: b:\n\n", [event("a: b:")]),
        Case("a space before the colon names another field", "data : a\n\n", []),
        Case("field names are case-sensitive", "Data: a\n\n", []),
        Case("unknown fields are ignored", "foo: bar\ndata: a\nbar\n\n", [event("a")]),
        Case("a field name must match exactly", "dat: a\ndataa: b\n\n", []),
    ]

    @Test(arguments: fieldCases)
    func fields(_ testCase: Case) { Self.check(testCase) }

    static let dataCases: [Case] = [
        Case("data lines are joined with LF", "data: a\ndata: b\n\n", [event("a\nb")]),
        Case("only the final LF is removed", "data: a\ndata:\n\n", [event("a\n")]),
        Case("two empty data lines", "data\ndata\n\n", [event("\n")]),
        Case("a leading empty data line", "data:\ndata: b\n\n", [event("\nb")]),
        Case("extra blank lines dispatch nothing more", "data: a\n\n\n\ndata: b\n\n", [event("a"), event("b")]),
        Case("data across fields in any order", "data: a\nevent: e\ndata: b\n\n", [event("a\nb", type: "e")]),
    ]

    @Test(arguments: dataCases)
    func dataJoining(_ testCase: Case) { Self.check(testCase) }

    static let eventTypeCases: [Case] = [
        Case("event sets the type", "event: add\ndata: a\n\n", [event("a", type: "add")]),
        Case("the type applies to one event only", "event: add\ndata: a\n\ndata: b\n\n",
             [event("a", type: "add"), event("b")]),
        Case("the last event field wins", "event: x\nevent: y\ndata: a\n\n", [event("a", type: "y")]),
        Case("an empty type means message", "event\ndata: a\n\n", [event("a")]),
        Case("an event field after data still counts", "data: a\nevent: add\n\n", [event("a", type: "add")]),
        Case("the type resets even when nothing is dispatched", "event: add\n\ndata: b\n\n", [event("b")]),
        Case("a type named again, another, the first again, none",
             "event: item.agentMessage.delta\ndata: a\n\nevent: item.agentMessage.delta\ndata: b\n\n"
                + "event: item.reasoning.delta\ndata: c\n\nevent: item.agentMessage.delta\ndata: d\n\n"
                + "event: item.agentMessage.delt\ndata: e\n\nevent:\ndata: f\n\n",
             [event("a", type: "item.agentMessage.delta"), event("b", type: "item.agentMessage.delta"),
              event("c", type: "item.reasoning.delta"), event("d", type: "item.agentMessage.delta"),
              event("e", type: "item.agentMessage.delt"), event("f")]),
    ]

    @Test(arguments: eventTypeCases)
    func eventType(_ testCase: Case) { Self.check(testCase) }

    static let idCases: [Case] = [
        Case("id is carried", "id: 1\ndata: a\n\n", [event("a", id: "1")]),
        Case("id persists across events", "id: 1\ndata: a\n\ndata: b\n\n", [event("a", id: "1"), event("b", id: "1")]),
        Case("an empty id resets it", "id: 1\ndata: a\n\nid\ndata: b\n\n", [event("a", id: "1"), event("b")]),
        Case("an id containing U+0000 is ignored", "id: 1\ndata: a\n\nid: 2\u{0}3\ndata: b\n\n",
             [event("a", id: "1"), event("b", id: "1")]),
        Case("an id-only block moves the id", "id: 7\n\ndata: a\n\n", [event("a", id: "7")]),
        Case("an id after data in the block counts", "data: a\nid: 3\n\n", [event("a", id: "3")]),
        Case("an id keeps inner spaces and Unicode", "id:  é 1\ndata: a\n\n", [event("a", id: " é 1")]),
        Case("the last id in the block wins", "id: 1\nid: 2\ndata: a\n\n", [event("a", id: "2")]),
    ]

    @Test(arguments: idCases)
    func eventID(_ testCase: Case) { Self.check(testCase) }

    static let retryCases: [Case] = [
        Case("a valid retry", "retry: 1500\ndata: a\n\n", [event("a", retry: 1500)]),
        Case("retry zero", "retry: 0\ndata: a\n\n", [event("a", retry: 0)]),
        Case("retry belongs to its block", "retry: 1500\ndata: a\n\ndata: b\n\n", [event("a", retry: 1500), event("b")]),
        Case("the last valid retry wins", "retry: 1\nretry: 2\ndata: a\n\n", [event("a", retry: 2)]),
        Case("an invalid retry keeps a valid one", "retry: 5\nretry: x\ndata: a\n\n", [event("a", retry: 5)]),
        Case("a huge retry saturates", "retry: 99999999999999999999999\ndata: a\n\n", [event("a", retry: Int.max)]),
    ] + ["retry: 15x", "retry: -1", "retry: +1", "retry: 1.5", "retry:  10", "retry: 10 ", "retry:", "retry",
         "retry: ١٠", "retry: 1e3", "retry: 0x10"].map { field in
        Case("ignored: \"\(field)\"", "\(field)\ndata: a\n\n", [event("a")])
    }

    @Test(arguments: retryCases)
    func retry(_ testCase: Case) { Self.check(testCase) }

    static let emptyDataCases: [Case] = [
        Case("an event-only block dispatches nothing", "event: a\n\n", []),
        Case("blank lines only", "\n\n\r\n\r", []),
        Case("a retry-only block dispatches nothing", "retry: 10\n\n", []),
        Case("an unknown-field block dispatches nothing", "foo: 1\n\n", []),
    ]

    @Test(arguments: emptyDataCases)
    func emptyDataDispatchesNothing(_ testCase: Case) { Self.check(testCase) }

    static let endOfStreamCases: [Case] = [
        Case("an unterminated line is discarded", "data: a", []),
        Case("an event without its blank line is discarded", "data: a\n", []),
        Case("complete events are kept, the partial one is not", "data: a\n\ndata: b\n", [event("a")]),
        Case("a CR-terminated line without a blank line", "data: a\r", []),
    ]

    @Test(arguments: endOfStreamCases)
    func partialEventAtEndOfStream(_ testCase: Case) { Self.check(testCase) }

    static let utf8Cases: [Case] = [
        Case("valid multi-byte text", "data: héllo € 😀\n\n", [event("héllo € 😀")]),
        Case("an invalid byte", bytes: bytes("data: ", [0xFF], "\n\n"), [event("\u{FFFD}")]),
        Case("an invalid byte then text", bytes: bytes("data: ", [0xFF], "a\n\n"), [event("\u{FFFD}a")]),
        Case("a truncated sequence at the line end", bytes: bytes("data: ", [0xE2, 0x82], "\n\n"), [event("\u{FFFD}")]),
        Case("an overlong encoding", bytes: bytes("data: ", [0xC0, 0xAF], "\n\n"), [event("\u{FFFD}\u{FFFD}")]),
        Case("an encoded surrogate", bytes: bytes("data: ", [0xED, 0xA0, 0x80], "\n\n"),
             [event("\u{FFFD}\u{FFFD}\u{FFFD}")]),
        Case("a sequence cut by a line end", bytes: bytes("data: ", [0xE2], "\ndata: ", [0x82, 0xAC], "\n\n"),
             [event("\u{FFFD}\n\u{FFFD}\u{FFFD}")]),
        Case("an invalid byte in a field name", bytes: bytes("data", [0xFF], ": a\n\n"), []),
        Case("an invalid byte in the type", bytes: bytes("event: ", [0xFF], "\ndata: a\n\n"),
             [event("a", type: "\u{FFFD}")]),
        Case("an invalid type, then its replacement spelled, then invalid again",
             bytes: bytes("event: ", [0xFF], "\ndata: a\n\nevent: \u{FFFD}\ndata: b\n\nevent: x", [0xFF], "\ndata: c\n\n"),
             [event("a", type: "\u{FFFD}"), event("b", type: "\u{FFFD}"), event("c", type: "x\u{FFFD}")]),
        Case("an invalid byte in the id", bytes: bytes("id: ", [0xFE], "\ndata: a\n\n"), [event("a", id: "\u{FFFD}")]),
        Case("an invalid byte in a comment", bytes: bytes(":", [0xFE], "\n"), [.comment("\u{FFFD}")], emitComments: true),
    ]

    @Test(arguments: utf8Cases)
    func invalidUTF8IsReplaced(_ testCase: Case) { Self.check(testCase) }

    static let oversizedLineCases: [Case] = [
        Case("a line at the limit is kept", "data: ab\n\n", [event("ab")], maxLineLength: 8),
        Case("the limit excludes the line end", "data: ab\r\n\r\n", [event("ab")], maxLineLength: 8),
        Case("a line over the limit is reported and its event dropped", "data: abc\n\ndata: b\n\n",
             [.lineTooLong(limit: 8), event("b")], maxLineLength: 8),
        Case("the whole block of an oversized line is dropped", "data: a\ndata: 123456\ndata: b\n\ndata: c\n\n",
             [.lineTooLong(limit: 8), event("c")], maxLineLength: 8),
        Case("an id in a dropped block does not apply", "id: 5\ndata: 123456\n\ndata: c\n\n",
             [.lineTooLong(limit: 8), event("c")], maxLineLength: 8),
        Case("an id before the dropped block still applies", "id: 4\n\nid: 5\ndata: 123456\n\ndata: c\n\n",
             [.lineTooLong(limit: 8), event("c", id: "4")], maxLineLength: 8),
        Case("a type in a dropped block does not apply", "event: e\ndata: 123456\n\ndata: c\n\n",
             [.lineTooLong(limit: 8), event("c")], maxLineLength: 8),
        Case("a CR-terminated oversized line", "data: abc\rdata: b\r\rdata: c\r\r",
             [.lineTooLong(limit: 8), event("c")], maxLineLength: 8),
        Case("an oversized comment keeps its event", "data: a\n: 12345678\ndata: b\n\n",
             [.lineTooLong(limit: 8), event("a\nb")], emitComments: true, maxLineLength: 8),
        Case("an oversized line at the end of the stream", "data: a\n\ndata: 123456789",
             [event("a"), .lineTooLong(limit: 8)], maxLineLength: 8),
    ]

    @Test(arguments: oversizedLineCases)
    func oversizedLine(_ testCase: Case) { Self.check(testCase) }

    // MARK: - Memory bound

    /// The decoder never asks for more than the limit, but the allocator may round a request
    /// up and Array reports the usable size: glibc to a page for large blocks, jemalloc (which
    /// the binary links) to its next size class, at most a quarter more (four classes a doubling).
    static func allocatorSlack(_ limit: Int) -> Int { max(4096, limit / 4) }

    /// A line far beyond the limit, fed in chunks of several sizes, never grows the buffer past the limit.
    @Test(arguments: [1, 7, 4096, 100_003])
    func oversizedLineKeepsMemoryBounded(chunkSize: Int) {
        let limit = 64 << 10
        var decoder = SSEDecoder(maxLineLength: limit)
        let size = chunkSize == 1 ? 200_000 : 1_000_000
        let input = Array("data: ".utf8) + Array(repeating: UInt8(ascii: "x"), count: size) + Array("\n\ndata: ok\n\n".utf8)
        var outputs: [Output] = []
        var largestBuffered = 0
        var largestCapacity = 0
        var start = 0
        while start < input.count {
            let end = min(start + chunkSize, input.count)
            input[start..<end].withUnsafeBytes { decoder.feed($0) { outputs.append($0) } }
            largestBuffered = max(largestBuffered, decoder.bufferedLineByteCount)
            largestCapacity = max(largestCapacity, decoder.lineBufferCapacity)
            start = end
        }
        #expect(largestBuffered <= limit)
        #expect(largestCapacity <= limit + Self.allocatorSlack(limit))
        #expect(outputs == [.lineTooLong(limit: limit), Self.event("ok")])
    }

    /// A line exactly at the limit, split across chunks, is delivered whole with the buffer at the limit.
    @Test func lineAtTheLimitAcrossChunks() {
        let limit = 64 << 10
        var decoder = SSEDecoder(maxLineLength: limit)
        let payload = String(repeating: "y", count: limit - 6)
        let input = Array("data: \(payload)\n\n".utf8)
        var outputs: [Output] = []
        var largestCapacity = 0
        for start in stride(from: 0, to: input.count, by: 1000) {
            input[start..<min(start + 1000, input.count)].withUnsafeBytes { decoder.feed($0) { outputs.append($0) } }
            largestCapacity = max(largestCapacity, decoder.lineBufferCapacity)
        }
        #expect(largestCapacity <= limit + Self.allocatorSlack(limit))
        #expect(outputs == [Self.event(payload)])
    }

    // MARK: - Decoder state

    @Test func lastEventIDIsCommittedAtDispatch() {
        var decoder = SSEDecoder()
        _ = decoder.feed("id: 1\n")
        #expect(decoder.lastEventID == "")
        _ = decoder.feed("\n")
        #expect(decoder.lastEventID == "1")
    }

    @Test func lastEventIDSeedsEvents() {
        var decoder = SSEDecoder()
        decoder.lastEventID = "42"
        #expect(decoder.feed("data: a\n\nid: 43\ndata: b\n\n") == [Self.event("a", id: "42"), Self.event("b", id: "43")])
        #expect(decoder.lastEventID == "43")
    }

    @Test func reconnectionTimeTracksValidRetryFields() {
        var decoder = SSEDecoder()
        #expect(decoder.reconnectionTime == nil)
        _ = decoder.feed("retry: 2500\n")
        #expect(decoder.reconnectionTime == 2500)
        _ = decoder.feed("retry: soon\n\n")
        #expect(decoder.reconnectionTime == 2500)
    }

    /// `finish()` ends one connection's stream: the partial event goes, the resume state stays,
    /// and the next stream starts afresh (its BOM is stripped again).
    @Test func finishStartsANewStream() {
        var decoder = SSEDecoder()
        var outputs = decoder.feed("retry: 700\nid: 1\ndata: a\n\nid: 2\ndata: b\n\ndata: partial")
        decoder.finish()
        #expect(decoder.lastEventID == "2")
        #expect(decoder.reconnectionTime == 700)

        // Were "data: partial" still pending, these line ends would dispatch it.
        outputs += decoder.feed(Self.bytes(Self.bom, "\n\ndata: c\n\n"))
        #expect(outputs == [Self.event("a", id: "1", retry: 700), Self.event("b", id: "2"), Self.event("c", id: "2")])
    }

    @Test func finishDropsAnIDOfAnUnfinishedEvent() {
        var decoder = SSEDecoder()
        _ = decoder.feed("id: 1\ndata: a\n\nid: 2\ndata: b\n")
        decoder.finish()
        #expect(decoder.lastEventID == "1")
        #expect(decoder.feed("data: c\n\n") == [Self.event("c", id: "1")])
    }

    /// `id:` with no value resets the last event id, in whichever chunk it arrives: the id seen
    /// after each chunk is what a reconnect would send, so it must be empty once the reset block
    /// is dispatched — and not before (an undispatched block commits nothing).
    @Test(arguments: [
        ["id: 5\ndata: a\n\n", "id:\ndata: b\n\n"],
        ["id: 5\ndata: a\n\n", "id\n\n"],
        ["id: 5\ndata: a\n\n", "id:", "\n", "data: b\n", "\n"],
        ["id: 5\ndata: a\n\nid", ":\n\n"],
        ["id: 5\r\ndata: a\r\n\r\nid:\r", "\n\r\n"],
    ])
    func anEmptyIDInALaterChunkResetsTheLastEventID(_ chunks: [String]) {
        var decoder = SSEDecoder()
        var seen: [String] = []
        for chunk in chunks {
            _ = decoder.feed(chunk)
            seen.append(decoder.lastEventID)
        }
        #expect(seen.first == "5")
        #expect(seen.last == "")
        // Nothing but the dispatch of the reset block changes the id.
        #expect(seen.dropLast().allSatisfy { $0 == "5" }, "\(seen)")
        decoder.finish()
        #expect(decoder.lastEventID == "")
        #expect(decoder.feed("data: c\n\n") == [Self.event("c")])
    }

    /// A reset carried over a connection: the decoder seeded with the reset (empty) id stamps
    /// later events with no id, as a fresh stream would.
    @Test func aResetIDSurvivesFinish() {
        var decoder = SSEDecoder()
        _ = decoder.feed("id: 9\ndata: a\n\n")
        _ = decoder.feed("id:\n")
        decoder.finish()
        // The reset block was never dispatched: the id in force is still 9.
        #expect(decoder.lastEventID == "9")
        _ = decoder.feed("id:\n\n")
        decoder.finish()
        #expect(decoder.lastEventID == "")
    }

    @Test func convenienceFeedsAgree() {
        let text = "\u{FEFF}event: e\r\nid: é\rdata: a\n\n: c\ndata: b\n\n"
        var fromString = SSEDecoder(emitComments: true)
        var fromArray = SSEDecoder(emitComments: true)
        var fromSequence = SSEDecoder(emitComments: true)
        let expected: [Output] = [Self.event("a", type: "e", id: "é"), .comment("c"), Self.event("b", id: "é")]
        #expect(fromString.feed(text) == expected)
        #expect(fromArray.feed(Array(text.utf8)) == expected)
        // A sequence without contiguous storage takes the copying path.
        #expect(fromSequence.feed(text.utf8.lazy.map { $0 }) == expected)
    }

    @Test func emptyChunksChangeNothing() {
        var decoder = SSEDecoder()
        var outputs = decoder.feed("data: a\r")
        outputs += decoder.feed([UInt8]())
        outputs += decoder.feed("\n\n")
        #expect(outputs == [Self.event("a")])
    }

    // MARK: - Property: chunking never changes the outputs

    /// For varied generated streams, any split into chunks decodes exactly as the whole stream does.
    @Test(arguments: 0..<24 as Range<UInt64>)
    func randomChunkingMatchesWholeStream(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let corpus = Corpus.make(events: 300, using: &random)

        var whole = SSEDecoder(emitComments: true)
        let expected = whole.feed(corpus.bytes)
        whole.finish()
        // Guards against a vacuous property: the stream decodes to what was generated.
        #expect(corpus.dispatchableEvents > 200 && corpus.bytes.count > 10_000)
        #expect(expected.count { if case .event = $0 { true } else { false } } == corpus.dispatchableEvents)
        #expect(expected.count { if case .comment = $0 { true } else { false } } == corpus.comments)

        for maxChunk in [1, 2, 5, 17, 256, 4096] {
            var decoder = SSEDecoder(emitComments: true)
            var outputs: [Output] = []
            var start = 0
            while start < corpus.bytes.count {
                let end = min(start + Int.random(in: 1...maxChunk, using: &random), corpus.bytes.count)
                corpus.bytes[start..<end].withUnsafeBytes { decoder.feed($0) { outputs.append($0) } }
                start = end
            }
            decoder.finish()
            #expect(outputs == expected, "chunks of 1...\(maxChunk)")
            #expect(decoder.lastEventID == whole.lastEventID)
            #expect(decoder.reconnectionTime == whole.reconnectionTime)
        }
    }

    /// A generated event stream, with what it must decode to in counts.
    struct Corpus {
        var bytes: [UInt8] = []
        var dispatchableEvents = 0
        var comments = 0

        static let types = ["message", "update", "session.status", "é-vent", ""]
        static let words = ["hello", "a:b", " leading", "  two", "trailing ", "é", "€", "😀", ":", "{\"k\":[1,2]}", ""]

        static func make(events: Int, using random: inout SeededRandom) -> Corpus {
            var corpus = Corpus()
            // Each line end is LF, CR or CRLF; after a CR, a blank line must not begin with LF or
            // the two would read as one CRLF and merge the blocks.
            var lastEndedWithCR = false
            func line(_ content: [UInt8], blank: Bool = false) {
                corpus.bytes += content
                let endings: [[UInt8]] = blank && lastEndedWithCR ? [[0x0D], [0x0D, 0x0A]] : [[0x0A], [0x0D], [0x0D, 0x0A]]
                let ending = endings.randomElement(using: &random)!
                corpus.bytes += ending
                lastEndedWithCR = ending == [0x0D]
            }
            func text(maxWords: Int) -> [UInt8] {
                var value: [UInt8] = []
                for _ in 0..<Int.random(in: 0...maxWords, using: &random) {
                    value += Array(words.randomElement(using: &random)!.utf8)
                    if Int.random(in: 0..<40, using: &random) == 0 { value.append(0xFF) }  // invalid UTF-8
                }
                return value
            }

            if random.next() % 2 == 0 { corpus.bytes += [0xEF, 0xBB, 0xBF] }
            for _ in 0..<events {
                var fields: [[UInt8]] = []
                if Int.random(in: 0..<5, using: &random) == 0 {
                    fields.append(Array(":".utf8) + text(maxWords: 3))
                    corpus.comments += 1
                }
                if Bool.random(using: &random) {
                    fields.append(Array("event: \(types.randomElement(using: &random)!)".utf8))
                }
                if Int.random(in: 0..<3, using: &random) == 0 {
                    fields.append(Array("id: \(random.next() % 1000)".utf8))
                }
                if Int.random(in: 0..<8, using: &random) == 0 {
                    let value = ["250", "3000", "x1", "", " 5"].randomElement(using: &random)!
                    fields.append(Array("retry: \(value)".utf8))
                }
                if Int.random(in: 0..<8, using: &random) == 0 {
                    fields.append(Array("unknown: \(random.next())".utf8))
                }
                let dataLines = Int.random(in: 0..<10, using: &random) == 0 ? 0 : Int.random(in: 1...4, using: &random)
                for _ in 0..<dataLines {
                    fields.append(Int.random(in: 0..<10, using: &random) == 0 ? Array("data".utf8)
                                  : Array("data:".utf8) + text(maxWords: 6))
                }
                if dataLines > 0 { corpus.dispatchableEvents += 1 }
                fields.shuffle(using: &random)
                for field in fields { line(field) }
                line([], blank: true)
            }
            // A trailing event without its blank line, which `finish()` must drop.
            line(Array("id: never\ndata: never".utf8))
            return corpus
        }
    }
}

/// The fast ASCII test that decides whether an event's data needs UTF-8 repair.
@Suite struct SSEDecoderASCIITests {
    @Test func aHighBitAnywhereIsFound() {
        for length in 0..<40 {
            let ascii = [UInt8](repeating: 0x61, count: length)
            #expect(SSEDecoder.isASCII(ascii))
            for position in 0..<length {
                var bytes = ascii
                bytes[position] = 0xC3
                #expect(!SSEDecoder.isASCII(bytes), "length \(length), position \(position)")
            }
        }
    }
}
