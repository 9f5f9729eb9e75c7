import Testing
import TetherCore
import TetherTestSupport
@testable import TetherOpenCode

/// The 2.x deltas read straight from their bytes (`OpenCode2HotFrame`, used when `--raw` is not
/// asked for) must mean exactly what the same frames decoded whole mean.
@Suite struct OpenCode2HotFrameTests {
    static let session = "ses_2b7f0c9e1d55Lq3vN8rTk0aZ"
    static let message = "msg_2b7f0c9f0a11"

    static func delta(_ text: String, type: String = "session.text.delta", ordinal: String = "0",
                      before: String = "", after: String = "") -> String {
        #"{"id":"evt_\#(text.count)","created":1765100000000,"type":"\#(type)","location":{"directory":"/home/dev/demo"},"data":{\#(before)"assistantMessageID":"\#(message)","ordinal":\#(ordinal),"delta":"\#(text)","sessionID":"\#(session)"\#(after)}}"#
    }

    static func durable(_ type: String, seq: Int, data: String) -> String {
        #"{"id":"evt_d\#(seq)","created":1765100000000,"type":"\#(type)","durable":{"aggregateID":"\#(session)","seq":\#(seq),"version":1},"data":\#(data)}"#
    }

    static let item = #"{"sessionID":"\#(session)","assistantMessageID":"\#(message)","ordinal":0}"#
    static let reasoning = #"{"sessionID":"\#(session)","assistantMessageID":"\#(message)","ordinal":1}"#

    /// A turn in frames of every shape the hot path reads, with ones it must leave to the decoder.
    static let frames: [(frame: String, hot: Bool)] = [
        (durable("session.input.promoted", seq: 1, data: #"{"sessionID":"\#(session)","inputID":"inp_1"}"#), false),
        (durable("session.execution.started", seq: 2, data: #"{"sessionID":"\#(session)"}"#), false),
        (durable("session.text.started", seq: 3, data: item), false),
        (delta("Hel"), true),
        (delta("lo"), true),
        // Keys in another order, members it does not read, escapes and non-ASCII in the delta,
        // `durable: null`, `created` as an integral double.
        (#"{"data":{"sessionID":"\#(session)","delta":" \"w\u00f6rld\"\n","extra":{"x":[1,2,{"y":null}]},"ordinal":0,"assistantMessageID":"\#(message)"},"durable":null,"type":"session.text.delta","created":1.7651e12}"#, true),
        (durable("session.reasoning.started", seq: 4, data: reasoning), false),
        (delta("why", type: "session.reasoning.delta", ordinal: "1"), true),
        (delta(" not", type: "session.reasoning.delta", ordinal: "1.0"), true),
        // Left to the decoder: durable, a key spelled with an escape, a field of another type or
        // missing, a repeated key, another type, no session.
        (durable("session.text.delta", seq: 5, data: #"{"sessionID":"\#(session)","assistantMessageID":"\#(message)","ordinal":0,"delta":"!"}"#), false),
        (delta("x", before: #""d\u0065lta":"escaped","#), false),
        (delta("x", ordinal: #""0""#), false),
        (delta("x", ordinal: "0.5"), false),
        (delta("one", after: #","delta":"two""#), false),
        (delta("x", after: #","sessionID":"ses_other""#), false),
        (#"{"type":"session.text.delta","type":"session.text.delta","data":\#(item)}"#, false),
        (#"{"type":"session.text.delta","data":{"assistantMessageID":"\#(message)","ordinal":0,"delta":"x"}}"#, false),
        (#"{"type":"session.text.delta","data":{"sessionID":"\#(session)","ordinal":0,"delta":"x"}}"#, false),
        (#"{"type":"session.text.delta","data":["not","an","object"]}"#, false),
        (delta("x", type: "session.text.ended"), false),
        (durable("session.text.ended", seq: 6, data: #"{"sessionID":"\#(session)","assistantMessageID":"\#(message)","ordinal":0,"text":"Hello \"wörld\"\n"}"#), false),
        (durable("session.execution.succeeded", seq: 7, data: #"{"sessionID":"\#(session)"}"#), false),
    ]

    @Test func theDeltasAreReadWithoutATree() {
        for (frame, hot) in Self.frames {
            let read = OpenCode2HotFrame.read(Array(frame.utf8))
            #expect((read != nil) == hot, "\(frame)")
        }
        let read = OpenCode2HotFrame.read(Array(Self.delta("Hel").utf8))
        #expect(read == OpenCode2TextDelta(kind: .text, session: Self.session, message: Self.message, ordinal: 0, delta: "Hel",
                                           created: 1_765_100_000_000))
    }

    @Test func readWithoutATreeTheEventsAreTheSame() throws {
        var whole = OpenCode2FrameReader()
        var read = OpenCode2FrameReader(keepingRaw: false)
        var all: [Event] = []
        for (frame, _) in Self.frames {
            let expected = whole.events(fromEventData: frame)
            let got = read.events(fromEventData: frame)
            #expect(got?.stamped(at: 0) == expected?.withoutRaw.stamped(at: 0), "\(frame)")
            all += got ?? []
        }
        // The walk through the turn produced what it should (a test that reads nothing would
        // pass the comparison above).
        // (Some frames left to the decoder are deltas too: the first five are the hot ones.)
        let deltas = all.filter { $0.type == .partDelta }.compactMap { $0.data["delta"]?.string }
        #expect(Array(deltas.prefix(5)) == ["Hel", "lo", " \"wörld\"\n", "why", " not"])
        #expect(all.contains { $0.type == .turnCompleted })
    }

    /// The stream machine takes a delta read straight as it takes the same frame decoded whole:
    /// the same events, and its `created` moves the clock a reconnect looks back from.
    @Test func theMachineTakesAReadDeltaAsTheDecodedFrame() throws {
        let frame = Array(Self.delta("Hel").utf8)
        let hot = try #require(OpenCode2HotFrame.read(frame))
        let wire = try OpenCode2WireDecoder.decode(frame, keepingRaw: false)
        let connected = try OpenCode2Tests.connected()
        func machine() -> OpenCode2StreamMachine {
            OpenCode2StreamMachine(request: EventsRequest(follow: true), configuration: .init(endpoint: "http://oc"))
        }
        var read = machine()
        var whole = machine()
        _ = read.receive(connected)
        _ = whole.receive(connected)
        let readActions = read.receive(hot)
        let wholeActions = whole.receive(wire)
        guard case .emit(let readEvents) = readActions.first, case .emit(let wholeEvents) = wholeActions.first else {
            Issue.record("a delta emitted nothing: \(readActions), \(wholeActions)")
            return
        }
        #expect(readEvents.stamped(at: 0) == wholeEvents.stamped(at: 0))
        #expect(readActions.count == wholeActions.count)
        _ = read.receive(connected)
        _ = whole.receive(connected)
        #expect(read.createdWhileAway == 1_765_100_000_000)
        #expect(read.createdWhileAway == whole.createdWhileAway)
    }

    /// Each delta frame with bytes changed at random: whatever the hot path still reads, the
    /// decoder reads the same way (a mini fuzzer, replayable from its seed).
    @Test(arguments: [UInt64(1), 2, 3]) func changedBytesReadTheSameOrFallBack(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let alphabet = Array(#"{}[]":,\ 0123456789.-eEtruflsna"#.utf8)
        let hot = Self.frames.filter(\.hot).map { Array($0.frame.utf8) }
        var readHot = 0
        for _ in 0..<1_500 {
            var bytes = hot.randomElement(using: &random)!
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] = alphabet.randomElement(using: &random)!
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
                }
            }
            let frame = String(decoding: bytes, as: UTF8.self)
            guard Array(frame.utf8) == bytes else { continue }  // not UTF-8: SSE data never is
            var whole = OpenCode2FrameReader()
            var read = OpenCode2FrameReader(keepingRaw: false)
            let expected = whole.events(fromEventData: frame)
            let got = read.events(fromEventData: frame)
            if OpenCode2HotFrame.read(bytes) != nil { readHot += 1 }
            #expect(got?.stamped(at: 0) == expected?.withoutRaw.stamped(at: 0), "\(frame)")
        }
        // Most changes break the frame or a field the walk checks; some must still be read hot,
        // or this compares nothing.
        #expect(readHot > 50)
    }
}
