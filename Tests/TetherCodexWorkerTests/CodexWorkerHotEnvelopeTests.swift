import Foundation
import Testing
import TetherTestSupport
import TetherCore
@testable import TetherCodexWorker

/// Delta envelopes read straight from their bytes (`CodexWorkerDelta`, used when `--raw` is not
/// asked for) must mean exactly what the same envelopes parsed whole mean.
@Suite struct CodexWorkerDeltaTests {
    static let job = "job_1560b5bbcaeb488b"

    static func envelope(_ type: String, seq: String, _ payload: String) -> String {
        #"{"type":"\#(type)","ts":"2026-11-26T20:00:00.000Z","jobId":"\#(job)","seq":\#(seq),"payload":\#(payload)}"#
    }

    static let lines: [(line: String, read: Bool)] = [
        (envelope("job.state", seq: "1", #"{"threadId":"thr_1","state":"RUNNING"}"#), false),
        (envelope("item.started", seq: "2", #"{"threadId":"thr_1","item":{"type":"agentMessage","id":"msg_1","text":""}}"#), false),
        (envelope("item.agentMessage.delta", seq: "3", #"{"threadId":"thr_1","itemId":"msg_1","delta":"Hel"}"#), true),
        (envelope("item.agentMessage.delta", seq: "4", #"{"threadId":"thr_1","itemId":"msg_1","delta":"lo \"w\u00f6rld\"\n"}"#), true),
        // A duplicate (same job, seq and type) is dropped either way; the same seq with another type is not.
        (envelope("item.agentMessage.delta", seq: "4", #"{"threadId":"thr_1","itemId":"msg_1","delta":"again"}"#), true),
        (envelope("item.commandExecution.outputDelta", seq: "4", #"{"threadId":"thr_1","itemId":"cmd_1","delta":"out\n"}"#), true),
        // Keys in another order; no seq; no thread; seq written as 5.0.
        (#"{"payload":{"delta":"!","itemId":"msg_1"},"seq":5,"jobId":"\#(job)","type":"item.agentMessage.delta"}"#, true),
        (#"{"type":"item.fileChange.outputDelta","jobId":"\#(job)","payload":{"itemId":"fc_1","delta":"patched"}}"#, true),
        (envelope("item.agentMessage.delta", seq: "6.0", #"{"itemId":"msg_1","delta":"."}"#), true),
        // Left to the parser: escaped key, a field of another type, a repeated key, a fraction seq.
        (envelope("item.agentMessage.delta", seq: "7", #"{"item\u0049d":"msg_1","delta":"esc"}"#), false),
        (envelope("item.agentMessage.delta", seq: "8", #"{"itemId":"msg_1","delta":8}"#), false),
        (envelope("item.agentMessage.delta", seq: "9", #"{"itemId":"msg_1","delta":"a","delta":"b"}"#), false),
        (envelope("item.agentMessage.delta", seq: "9.5", #"{"itemId":"msg_1","delta":"half"}"#), false),
        (envelope("item.completed", seq: "10", #"{"threadId":"thr_1","item":{"type":"agentMessage","id":"msg_1","text":"Hello"}}"#), false),
        (envelope("job.finished", seq: "11", #"{"threadId":"thr_1","state":"DONE"}"#), false),
    ]

    @Test func theDeltasAreReadWithoutATree() {
        for (line, read) in Self.lines {
            #expect((CodexWorkerDelta.read(Array(line.utf8), strings: nil) != nil) == read, "\(line)")
        }
    }

    @Test func readWithoutATreeTheEventsAreTheSame() throws {
        var whole = CodexWorkerWireDecoder()
        var read = CodexWorkerWireDecoder(keepingRaw: false)
        var all: [Event] = []
        for (line, _) in Self.lines {
            let wholeEvents = whole.events(fromEventData: line)
            let readEvents = read.events(fromEventData: line)
            let expected = try #require(wholeEvents)
            let got = try #require(readEvents)
            #expect(expected.allSatisfy { $0.raw != nil })  // kept: --raw prints the envelope
            #expect(got.stamped(at: 0) == expected.withoutRaw.stamped(at: 0), "\(line)")
            all += got
        }
        let deltas = all.filter { $0.type == .partDelta }
        #expect(deltas.compactMap { $0.data["delta"]?.string } == ["Hel", "lo \"wörld\"\n", "out\n", "!", "patched", ".", "esc", "a", "half"])
        #expect(deltas.first?.cursor == "\(Self.job):3")
        #expect(all.first { $0.type == .partCompleted }?.data["text"] == "Hello")
    }

    @Test func aBrokenEnvelopeIsNotReadEitherWay() {
        let bytes = Array(Self.lines[2].line.utf8)
        for end in 0..<bytes.count {
            #expect(CodexWorkerDelta.read(Array(bytes[..<end]), strings: nil) == nil)
        }
    }
}
