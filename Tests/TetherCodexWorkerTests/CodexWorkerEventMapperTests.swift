import Foundation
import Testing
import TetherCore
@testable import TetherCodexWorker
import TetherStreaming

@Suite struct CodexWorkerEventMapperTests {
    let job = "job_1560b5bbcaeb488b"
    let thread = "01a2c3d4-thread"

    func envelopes(_ name: String) throws -> [JSONValue] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "jsonl", subdirectory: "Transcripts"))
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    /// Envelopes that omit the thread take the one last named for their job — by an envelope or
    /// by the job's snapshot (`noteThread`) — whichever came last, however many envelopes of
    /// the same job came between.
    @Test func anEnvelopeWithoutAThreadTakesTheLastOneNamedForItsJob() throws {
        var mapper = CodexWorkerEventMapper()
        func delta(_ seq: Int, thread: String?) throws -> Event? {
            let threadField = thread.map { #","threadId":"\#($0)""# } ?? ""
            let envelope = try JSONParser.parse(#"{"type":"item.agentMessage.delta","jobId":"\#(job)","seq":\#(seq),"payload":{"itemId":"a1","delta":"x"\#(threadField)}}"#)
            return mapper.map(envelope).last
        }
        #expect(try delta(1, thread: "th-a")?.session == "th-a")
        #expect(try delta(2, thread: nil)?.session == "th-a")
        #expect(try delta(3, thread: "th-b")?.session == "th-b")
        #expect(try delta(4, thread: nil)?.session == "th-b")
        mapper.noteThread("th-c", job: job)
        #expect(try delta(5, thread: nil)?.session == "th-c")
        #expect(try delta(6, thread: "th-c")?.session == "th-c")
        mapper.noteThread("th-d", job: job)
        #expect(try delta(7, thread: "th-c")?.session == "th-c")  // the envelope names it again
        #expect(try delta(8, thread: nil)?.session == "th-c")
        #expect(try delta(8, thread: nil) == nil)  // seen: dropped
    }

    @Test func mapsAnAcceptedCommandApproval() throws {
        var mapper = CodexWorkerEventMapper()
        let events = try envelopes("command-approval-accepted").flatMap { mapper.map($0) }

        #expect(events.filter { $0.type == .turnStarted }.map(\.turn) == [job])
        #expect(events.first?.session == thread)
        #expect(events.allSatisfy { $0.turn == job })
        // Every event that came from an envelope carries job:seq.
        #expect(events.filter { $0.type == .partDelta }.map(\.cursor) == ["\(job):11", "\(job):14", "\(job):15"])

        let statuses = events.filter { $0.type == .sessionStatus }.compactMap { $0.data["status"]?.string }
        #expect(statuses == ["busy", "waiting_approval", "busy", "idle"])  // QUEUED and RUNNING are one busy
        #expect(events.filter { $0.type == .sessionStatus }.allSatisfy { $0.session == thread })

        let approval = try #require(events.first { $0.type == .approvalRequested })
        #expect(approval.data["id"]?.string == CompositeID.join([job, "appr_a5f0aa11bb22cc33"]))
        #expect(approval.data["kind"] == "command")
        #expect(approval.data["command"] == "/bin/bash -lc 'touch x && echo done'")
        #expect(approval.data["cwd"] == "/p")
        #expect(approval.data["reason"] == "fake model wants to create a file")
        #expect(approval.data["options"]?.array?.count == 5)
        #expect(approval.data["proposed_amendment"] == ["touch", "x"])
        #expect(events.first { $0.type == .approvalResolved }?.data["decision"] == "accept")

        let completed = events.filter { $0.type == .partCompleted }
        #expect(completed.map(\.part) == ["u1", "call_b7b9a3ad", "a1"])
        #expect(completed[0].data["role"] == "user")
        #expect(completed[0].data["text"] == "create x")
        #expect(completed[1].data["kind"] == "command")
        #expect(completed[1].data["output"] == "done\n")
        #expect(completed[1].data["exit_code"] == 0)
        #expect(completed[2].data["text"] == "Created x.")
        let deltas = events.filter { $0.type == .partDelta && $0.part == "a1" }.compactMap { $0.data["delta"]?.string }.joined()
        #expect(deltas == "Created x.")

        let done = try #require(events.last)
        #expect(done.type == .turnCompleted)
        #expect(done.data["status"] == "completed")
        #expect(mapper.pendingApprovals.isEmpty)
        #expect(mapper.lastSeq(of: job) == 19)
    }

    /// A watch that sees job after job keeps per-job state for the newest `jobLimit` of them,
    /// and says once that it let go of the oldest.
    @Test func perJobStateIsBoundedAndItsBoundSaidOnce() throws {
        var mapper = CodexWorkerEventMapper()
        for index in 0...CodexWorkerEventMapper.jobLimit {
            let job = "job_\(index)"
            for (seq, state) in [(1, "RUNNING"), (2, "DONE")] {
                _ = mapper.map(try JSONParser.parse(#"{"type":"job.state","jobId":"\#(job)","seq":\#(seq),"payload":{"state":"\#(state)","threadId":"th"}}"#))
            }
            _ = mapper.map(try JSONParser.parse(#"{"type":"job.finished","jobId":"\#(job)","seq":3,"payload":{"state":"DONE","threadId":"th"}}"#))
            if index == 0 { #expect(mapper.boundNote() == nil) }
        }
        #expect(mapper.lastSeqs.count == CodexWorkerEventMapper.jobLimit)
        #expect(mapper.lastSeq(of: "job_0") == nil && mapper.lastSeq(of: "job_\(CodexWorkerEventMapper.jobLimit)") == 3)
        #expect(mapper.boundNote()?.contains("\(CodexWorkerEventMapper.jobLimit) jobs") == true)
        #expect(mapper.boundNote() == nil)
    }

    @Test func replayedEnvelopesAreDroppedBySeq() throws {
        var mapper = CodexWorkerEventMapper()
        let all = try envelopes("command-approval-accepted")
        let first = all[0..<12].flatMap { mapper.map($0) }
        // A reconnect that resumes a little too early replays 8…11 again.
        let second = all[8...].flatMap { mapper.map($0) }
        var once = CodexWorkerEventMapper()
        let reference = all.flatMap { once.map($0) }
        func shape(_ events: [Event]) -> [String] { events.map { "\($0.type.rawValue)|\($0.part ?? "")|\($0.cursor ?? "")" } }
        #expect(shape(first + second) == shape(reference))
    }

    @Test func cancelWhileWaitingEndsCancelledAndClearsTheApproval() throws {
        var mapper = CodexWorkerEventMapper()
        let events = try envelopes("cancel-while-waiting").flatMap { mapper.map($0) }
        #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "cancelled")
        // The approval resolved after job.finished is stale: no event for it.
        #expect(events.filter { $0.type == .approvalResolved }.isEmpty)
        #expect(mapper.pendingApprovals.isEmpty)
        #expect(events.first { $0.type == .approvalRequested }?.data["risk"] == "high")
    }

    @Test func fileChangeApprovalCarriesTheChangesAndAFailedTurnItsError() throws {
        var mapper = CodexWorkerEventMapper()
        let events = try envelopes("file-change-declined-then-failed").flatMap { mapper.map($0) }
        let approval = try #require(events.first { $0.type == .approvalRequested })
        #expect(approval.data["kind"] == "file_change")
        #expect(approval.data["changes"]?[0]?["path"] == "a.txt")
        #expect(approval.data["changes"]?[0]?["kind"] == "update")
        #expect(approval.data["options"] == ["accept", "accept_for_session", "decline", "cancel"])
        #expect(events.first { $0.type == .approvalResolved }?.data["decision"] == "decline")
        #expect(events.first { $0.type == .partCompleted && $0.part == "fc1" }?.data["status"] == "declined")
        let error = try #require(events.first { $0.type == .error })
        #expect(error.data["retryable"] == true)
        let done = try #require(events.last)
        #expect(done.data["status"] == "failed")
        #expect(done.data["error"] == "model refused")
    }

    @Test func historyEnvelopesWithRestartingSeqAreKeptApart() {
        var mapper = CodexWorkerEventMapper()
        let history: [JSONValue] = [
            ["type": "item.completed", "jobId": "hist_t_1", "seq": 0, "payload": ["threadId": "t", "turnId": "1", "itemId": "u1", "item": ["type": "userMessage", "id": "u1", "content": [["type": "text", "text": "hi"]]]]],
            ["type": "job.finished", "jobId": "hist_t_1", "seq": 1, "payload": ["state": "DONE"]],
            ["type": "item.completed", "jobId": "hist_t_2", "seq": 0, "payload": ["threadId": "t", "turnId": "2", "itemId": "u2", "item": ["type": "userMessage", "id": "u2", "content": [["type": "text", "text": "again"]]]]],
            ["type": "job.finished", "jobId": "hist_t_2", "seq": 1, "payload": ["state": "DONE"]],
        ]
        let events = history.flatMap { mapper.map($0) }
        #expect(events.filter { $0.type == .turnCompleted }.count == 2)
        #expect(events.filter { $0.type == .partCompleted }.compactMap { $0.data["text"]?.string } == ["hi", "again"])
    }

    @Test(arguments: ["job_1:42", "job:with:colons:7"])
    func cursorsRoundTrip(cursor: String) throws {
        let parsed = try #require(CodexWorkerEventMapper.parseCursor(cursor))
        #expect(CodexWorkerEventMapper.cursor(job: parsed.job, seq: parsed.seq) == cursor)
    }

    /// Every seq a cursor can hold comes back from it whole: every power of ten and its
    /// neighbours, the extremes, short, long and non-ASCII jobs, jobs with colons.
    @Test func aCursorRoundTripsEverySeq() throws {
        var seqs: [Int64] = [0, 1, 9, Int64.max, Int64.max - 1, -1, -10, Int64.min]
        var power: Int64 = 1
        for _ in 1...18 {
            power *= 10  // up to 10^18, the last power of ten an Int64 holds
            seqs += [power - 1, power, power + 1]
        }
        for job in ["j", "job_fa097380ca36a0b8", "hist_é_1", "a:b"] {
            for seq in seqs {
                let cursor = CodexWorkerEventMapper.cursor(job: job, seq: seq)
                let parsed = try #require(CodexWorkerEventMapper.parseCursor(cursor))
                #expect(parsed.job == job && parsed.seq == seq)
            }
        }
    }

    @Test(arguments: ["", "job", ":3", "job:x"])
    func rejectsBadCursors(cursor: String) {
        #expect(CodexWorkerEventMapper.parseCursor(cursor) == nil)
    }

    @Test func malformedEnvelopesAreIgnored() {
        var mapper = CodexWorkerEventMapper()
        #expect(mapper.map(.null).isEmpty)
        #expect(mapper.map(["type": "job.created"]).isEmpty)
        #expect(mapper.map(["jobId": "j"]).isEmpty)
    }
}
