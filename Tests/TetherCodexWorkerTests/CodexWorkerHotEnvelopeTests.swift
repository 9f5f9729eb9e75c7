import Foundation
import Testing
import TetherTestSupport
import TetherCore
@testable import TetherCodexWorker
import TetherStreaming

/// Delta and `item.started` envelopes read straight from their bytes (`CodexWorkerHotEnvelope`,
/// used when `--raw` is not asked for) must mean exactly what the same envelopes parsed whole mean.
@Suite struct CodexWorkerHotEnvelopeTests {
    static let job = "job_1560b5bbcaeb488b"

    static func envelope(_ type: String, seq: String, _ payload: String) -> String {
        #"{"type":"\#(type)","ts":"2026-11-26T20:00:00.000Z","jobId":"\#(job)","seq":\#(seq),"payload":\#(payload)}"#
    }

    static let lines: [(line: String, read: Bool)] = [
        (envelope("job.state", seq: "1", #"{"threadId":"thr_1","state":"RUNNING"}"#), false),
        (envelope("item.started", seq: "2", #"{"threadId":"thr_1","item":{"type":"agentMessage","id":"msg_1","text":""}}"#), true),
        // Items of other shapes: nested, a file change (kept for its approval), an escaped and a
        // repeated key inside the item, the item before the thread, no thread, not an object, no id.
        (envelope("item.started", seq: "20", #"{"threadId":"thr_1","item":{"type":"commandExecution","id":"cmd_1","command":"ls","commandActions":[{"type":"listFiles"}],"status":"inProgress"}}"#), true),
        (envelope("item.started", seq: "21", #"{"item":{"type":"fileChange","id":"fc_1","changes":[{"path":"a.txt","kind":{"type":"add"},"diff":"+a"}],"st\u0061tus":"inProgress","id":"fc_9"},"threadId":"thr_1"}"#), true),
        (#"{"type":"item.started","jobId":"\#(job)","seq":22,"payload":{"item":{"type":"reasoning","id":"rs_1","summary":[]}}}"#, true),
        (envelope("item.started", seq: "23", #"{"threadId":"thr_1","item":"not an item"}"#), true),
        (envelope("item.started", seq: "24", #"{"threadId":"thr_1","item":{"type":"agentMessage","text":""}}"#), true),
        (#"{"type":"item.started","payload":{"item":{"type":"plan","id":"plan_1","text":""}},"seq":25,"jobId":"\#(job)"}"#, true),
        (envelope("item.agentMessage.delta", seq: "3", #"{"threadId":"thr_1","itemId":"msg_1","delta":"Hel"}"#), true),
        (envelope("item.agentMessage.delta", seq: "4", #"{"threadId":"thr_1","itemId":"msg_1","delta":"lo \"w\u00f6rld\"\n"}"#), true),
        // A duplicate (same job, seq and type) is dropped either way; the same seq with another type is not.
        (envelope("item.agentMessage.delta", seq: "4", #"{"threadId":"thr_1","itemId":"msg_1","delta":"again"}"#), true),
        (envelope("item.commandExecution.outputDelta", seq: "4", #"{"threadId":"thr_1","itemId":"cmd_1","delta":"out\n"}"#), true),
        // Keys in another order; no seq; no thread; seq written as 5.0.
        (#"{"payload":{"delta":"!","itemId":"msg_1"},"seq":5,"jobId":"\#(job)","type":"item.agentMessage.delta"}"#, true),
        (#"{"type":"item.fileChange.outputDelta","jobId":"\#(job)","payload":{"itemId":"fc_1","delta":"patched"}}"#, true),
        (envelope("item.agentMessage.delta", seq: "6.0", #"{"itemId":"msg_1","delta":"."}"#), true),
        // item.started deduplicated like any envelope: the same seq again is dropped, the seq of
        // a delta is not (another type); the file change's approval shows its changes.
        (envelope("item.started", seq: "2", #"{"threadId":"thr_1","item":{"type":"agentMessage","id":"msg_dup","text":""}}"#), true),
        (envelope("item.started", seq: "3", #"{"threadId":"thr_1","item":{"type":"agentMessage","id":"msg_s3","text":""}}"#), true),
        (envelope("approval.required", seq: "30", #"{"threadId":"thr_1","approvalId":"ap_1","kind":"file_change","itemId":"fc_1"}"#), false),
        // Left to the parser: escaped key, a field of another type, a repeated key, a fraction seq.
        (envelope("item.agentMessage.delta", seq: "7", #"{"item\u0049d":"msg_1","delta":"esc"}"#), false),
        (envelope("item.agentMessage.delta", seq: "8", #"{"itemId":"msg_1","delta":8}"#), false),
        (envelope("item.agentMessage.delta", seq: "9", #"{"itemId":"msg_1","delta":"a","delta":"b"}"#), false),
        (envelope("item.agentMessage.delta", seq: "9.5", #"{"itemId":"msg_1","delta":"half"}"#), false),
        (envelope("item.started", seq: "26", #"{"threadId":"thr_1","item":{"type":"agentMessage","id":"msg_2"},"item":{"type":"agentMessage","id":"msg_3"}}"#), false),
        (envelope("item.started", seq: "27", #"{"threadId":"thr_1","\u0069tem":{"type":"agentMessage","id":"msg_4"}}"#), false),
        (envelope("item.started", seq: "28", #"{"threadId":7,"item":{"type":"agentMessage","id":"msg_5"}}"#), false),
        (envelope("item.started", seq: "29", #"{"threadId":"thr_1"}"#), false),  // no item: left to the parser
        (envelope("item.completed", seq: "10", #"{"threadId":"thr_1","item":{"type":"agentMessage","id":"msg_1","text":"Hello"}}"#), false),
        (envelope("job.finished", seq: "11", #"{"threadId":"thr_1","state":"DONE"}"#), false),
    ]

    @Test func theHotEnvelopesAreReadWithoutTheEnvelopesTree() throws {
        for (line, read) in Self.lines {
            #expect((CodexWorkerHotEnvelope.read(Array(line.utf8), strings: nil) != nil) == read, "\(line)")
        }
        // What an item.started reads: the item as the parser builds it, and the envelope's fields.
        let start = try #require(CodexWorkerHotEnvelope.read(Array(Self.lines[1].line.utf8), strings: nil))
        let item = try JSONParser.parse(#"{"type":"agentMessage","id":"msg_1","text":""}"#)
        #expect(start == .itemStarted(CodexWorkerItemStart(job: Self.job, seq: 2, thread: "thr_1", item: item)))
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
        // The items started, read straight or parsed: each once (a repeated seq is a duplicate).
        let started = all.filter { $0.type == .partStarted }.compactMap(\.part)
        #expect(started == ["msg_1", "cmd_1", "fc_1", "rs_1", "plan_1", "msg_s3", "msg_2", "msg_4", "msg_5"])
        let approval = try #require(all.first { $0.type == .approvalRequested })
        #expect(approval.data["changes"]?[0]?["path"] == "a.txt")
        #expect(all.first { $0.type == .partStarted && $0.part == "fc_1" }?.session == "thr_1")
    }

    /// Every busy word keeps a slot of its own in the reader's table: each reads back as the
    /// literal itself, not as a copy (two words in one slot would leave one of them a copy).
    @Test func everyBusyWordReadsBackAsItsLiteral() {
        #expect(wordsNotReadAsTheirLiterals(CodexWorkerHotEnvelope.busyWords).isEmpty)
    }

    @Test func aBrokenEnvelopeIsNotReadEitherWay() {
        for line in [Self.lines[1].line, Self.lines[8].line] {
            let bytes = Array(line.utf8)
            #expect(CodexWorkerHotEnvelope.read(bytes, strings: nil) != nil)
            for end in 0..<bytes.count {
                #expect(CodexWorkerHotEnvelope.read(Array(bytes[..<end]), strings: nil) == nil)
            }
        }
    }
}
