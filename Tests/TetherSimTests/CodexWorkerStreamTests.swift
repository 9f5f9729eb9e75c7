import Foundation
import Testing
@testable import TetherSim

@Suite("Codex Worker simulator: job event stream")
struct CodexWorkerStreamTests {
    /// The plain-reply sequence of notes §3, with the delta run collapsed.
    static let plainTurn = [
        "job.created", "job.state", "job.state", "turn.started",
        "item.started", "item.completed", "item.started", "item.completed",
        "item.started", "item.agentMessage.delta", "item.completed",
        "turn.completed", "job.state", "job.finished",
    ]

    static func collapsingDeltas(_ types: [String]) -> [String] {
        types.enumerated().filter { index, type in
            !(type.hasSuffix(".delta") || type.hasSuffix("Delta")) || index == 0 || types[index - 1] != type
        }.map(\.element)
    }

    @Test("SSE: `: connected`, live frames with id/event/data and seq from 0, open after job.finished")
    func liveStreamFraming() async throws {
        let options = CodexWorkerSimulator.Options(token: "tok", pingInterval: .milliseconds(150), pacing: .milliseconds(5))
        try await CWHarness.with(options) { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "hello there")
            let stream = try await harness.stream("/v1/jobs/\(job)/events")
            #expect(stream.status == 200)
            #expect(stream.headers["content-type"] == "text/event-stream")
            #expect(stream.headers["cache-control"] == "no-cache, no-transform")
            #expect(stream.headers["x-accel-buffering"] == "no")
            #expect(stream.headers["transfer-encoding"] == "chunked")
            let first = try #require(try await stream.nextFrame())
            #expect(first.lines == [": connected"])

            let frames = try await stream.events(through: "job.finished")
            for (index, frame) in frames.enumerated() {
                // Exactly three lines: id, event, data (the whole envelope on one line).
                #expect(frame.lines.count == 3)
                #expect(frame.lines[0] == "id: \(index)")
                #expect(frame.lines[1] == "event: \(frame.event ?? "")")
                #expect(frame.lines[2].hasPrefix("data: {\"type\":"))
                let envelope = frame.envelope
                #expect(envelope["seq"] as? Int == index)
                #expect(envelope["type"] as? String == frame.event)
                #expect(envelope["jobId"] as? String == job)
                #expect((envelope["ts"] as? String)?.hasSuffix("Z") == true)
                #expect(Array(envelope.keys).sorted() == ["jobId", "payload", "seq", "ts", "type"])
            }
            #expect(Self.collapsingDeltas(frames.compactMap(\.event)) == Self.plainTurn)
            #expect(frames[0].payload["threadId"] as? String == thread)
            #expect(frames[1].payload.count == 1 && frames[1].payload["state"] as? String == "QUEUED")
            #expect(frames[2].payload["state"] as? String == "RUNNING")
            #expect(frames[2].payload.keys.contains("errorMessage"))
            let turn = try #require(frames[3].payload["turn"] as? [String: Any])
            #expect(turn["status"] as? String == "inProgress")

            let deltas = frames.filter { $0.event == "item.agentMessage.delta" }.compactMap { $0.payload["delta"] as? String }
            let agentDone = try #require(frames.last { $0.event == "item.completed" })
            let item = try #require(agentDone.payload["item"] as? [String: Any])
            #expect(item["type"] as? String == "agentMessage")
            #expect(item["text"] as? String == deltas.joined())
            #expect(frames.last?.payload["state"] as? String == "DONE")

            // The stream never closes by itself: a ping follows job.finished.
            let after = try #require(try await stream.nextFrame(timeout: .seconds(3)))
            #expect(after.lines == [": ping"])
            #expect(!stream.closed)
        }
    }

    @Test("SSE on a finished job replays everything and stays open; Last-Event-ID is ignored")
    func replayOfFinishedJob() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "hello")
            try await harness.wait(job, for: "DONE")
            let stream = try await harness.stream("/v1/jobs/\(job)/events", headers: ["Last-Event-ID": "5"])
            #expect(try await stream.nextFrame()?.comment == ": connected")
            let frames = try await stream.events(through: "job.finished")
            #expect(frames.first?.id == 0)
            #expect(frames.map(\.id) == Array(0..<frames.count).map(Optional.some))
            #expect(try await stream.nextFrame(timeout: .seconds(3))?.comment == ": ping")
        }
    }

    @Test("cursor is exclusive, beyond the end is empty, below firstSeq-1 is 409, non-integer is 400")
    func cursorSemantics() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "hello")
            try await harness.wait(job, for: "DONE")

            let all = try await harness.request("GET", "/v1/jobs/\(job)/events")
            let data = try #require(all.json["data"] as? [[String: Any]])
            #expect(all.json["firstSeq"] as? Int == 0)
            #expect(all.json["nextCursor"] as? Int == data.count - 1)

            let page = try await harness.request("GET", "/v1/jobs/\(job)/events?cursor=3").json
            #expect((page["data"] as? [[String: Any]])?.first?["seq"] as? Int == 4)
            #expect(page["nextCursor"] as? Int == data.count - 1)

            let minusOne = try await harness.request("GET", "/v1/jobs/\(job)/events?cursor=-1").json
            #expect((minusOne["data"] as? [[String: Any]])?.count == data.count)

            let beyond = try await harness.request("GET", "/v1/jobs/\(job)/events?cursor=99").json
            #expect((beyond["data"] as? [Any])?.isEmpty == true)
            #expect(beyond["nextCursor"] as? Int == 99)

            let expired = try await harness.request("GET", "/v1/jobs/\(job)/events?cursor=-5")
            #expect(expired.status == 409 && expired.errorCode == "CURSOR_EXPIRED")
            let invalid = try await harness.request("GET", "/v1/jobs/\(job)/events?cursor=abc")
            #expect(invalid.status == 400 && invalid.errorCode == "INVALID_CURSOR")
            let missing = try await harness.request("GET", "/v1/jobs/job_0000000000000000/events")
            #expect(missing.status == 404 && missing.errorCode == "JOB_NOT_FOUND")

            // SSE resume: only seq > cursor is replayed.
            let stream = try await harness.stream("/v1/jobs/\(job)/events?cursor=5")
            let resumed = try await stream.events(through: "job.finished")
            #expect(resumed.first?.id == 6)
            #expect(resumed.count == data.count - 6)

            // Errors come before the stream, as JSON, even with an SSE Accept header.
            let sseError = try await harness.request(
                "GET", "/v1/jobs/\(job)/events?cursor=-7", headers: ["Accept": "text/event-stream"])
            #expect(sseError.status == 409 && sseError.errorCode == "CURSOR_EXPIRED")
            #expect(sseError.headers["content-type"]?.hasPrefix("application/json") == true)
        }
    }

    @Test("retention trims the log: firstSeq moves, old cursors expire")
    func retentionExpiresCursors() async throws {
        let options = CodexWorkerSimulator.Options(retention: 100, pingInterval: .milliseconds(100))
        try await CWHarness.with(options) { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "long 150")
            try await harness.wait(job, for: "DONE")
            let page = try await harness.request("GET", "/v1/jobs/\(job)/events").json
            let data = try #require(page["data"] as? [[String: Any]])
            #expect(data.count == 100)
            let lastSeq = try #require(data.last?["seq"] as? Int)
            let firstSeq = try #require(page["firstSeq"] as? Int)
            #expect(firstSeq == lastSeq - 99)
            #expect(data.first?["seq"] as? Int == firstSeq)
            #expect(page["nextCursor"] as? Int == lastSeq)
            #expect(data.cwTypes.filter { $0 == "item.agentMessage.delta" }.count <= 150)

            for cursor in [-1, 0, firstSeq - 2] {
                let expired = try await harness.request("GET", "/v1/jobs/\(job)/events?cursor=\(cursor)")
                #expect(expired.status == 409 && expired.errorCode == "CURSOR_EXPIRED", "cursor \(cursor)")
            }
            let edge = try await harness.request("GET", "/v1/jobs/\(job)/events?cursor=\(firstSeq - 1)").json
            #expect((edge["data"] as? [Any])?.count == 100)
            let sse = try await harness.request(
                "GET", "/v1/jobs/\(job)/events?cursor=0", headers: ["Accept": "text/event-stream"])
            #expect(sse.status == 409 && sse.errorCode == "CURSOR_EXPIRED")
        }
    }

    @Test("`long N` streams exactly N agent deltas")
    func longReply() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "benchmark: long 300 please")
            try await harness.wait(job, for: "DONE")
            let events = try await harness.events(job)
            #expect(events.cwTypes.filter { $0 == "item.agentMessage.delta" }.count == 300)
        }
    }

    @Test("dropStreamAfter cuts the first connection abruptly; a cursor resume reads to the end")
    func dropStreamFault() async throws {
        let options = CodexWorkerSimulator.Options(pingInterval: .milliseconds(100), dropStreamAfter: 5)
        try await CWHarness.with(options) { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "hello")
            try await harness.wait(job, for: "DONE")

            let first = try await harness.stream("/v1/jobs/\(job)/events")
            var ids: [Int] = []
            while let frame = try await first.nextEvent() { ids.append(frame.id ?? -1) }
            #expect(ids == [0, 1, 2, 3, 4])
            #expect(first.closed && !first.endedCleanly)

            let second = try await harness.stream("/v1/jobs/\(job)/events?cursor=4")
            let rest = try await second.events(through: "job.finished")
            #expect(rest.first?.id == 5)
            #expect(try await second.nextFrame(timeout: .seconds(3))?.comment == ": ping")
        }
    }

    @Test("dropStreamRepeats cuts every connection")
    func dropStreamEveryTime() async throws {
        let options = CodexWorkerSimulator.Options(
            pingInterval: .milliseconds(100), dropStreamAfter: 3, dropStreamRepeats: true)
        try await CWHarness.with(options) { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "hello")
            try await harness.wait(job, for: "DONE")
            for cursor in [-1, 2] {
                let stream = try await harness.stream("/v1/jobs/\(job)/events?cursor=\(cursor)")
                var count = 0
                while try await stream.nextEvent() != nil { count += 1 }
                #expect(count == 3)
                #expect(!stream.endedCleanly)
            }
        }
    }

    @Test("restart loses every job (404 JOB_NOT_FOUND) and cuts open streams; threads survive")
    func restartLosesJobs() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let done = try await harness.startTurn(thread, "hello")
            try await harness.wait(done, for: "DONE")
            let waiting = try await harness.startTurn(thread, "please run the build")
            try await harness.wait(waiting, for: "WAITING_APPROVAL")
            let stream = try await harness.stream("/v1/jobs/\(waiting)/events")
            _ = try await stream.events(through: "approval.required")

            try await harness.sim.restart()

            #expect(try await stream.nextEvent(timeout: .seconds(5)) == nil)
            #expect(!stream.endedCleanly)
            for job in [done, waiting] {
                let snapshot = try await harness.request("GET", "/v1/jobs/\(job)")
                #expect(snapshot.status == 404 && snapshot.errorCode == "JOB_NOT_FOUND")
                let events = try await harness.request("GET", "/v1/jobs/\(job)/events")
                #expect(events.status == 404 && events.errorCode == "JOB_NOT_FOUND")
                let approve = try await harness.approve(job, ["approvalId": "appr_0000000000000000", "decision": "accept"])
                #expect(approve.status == 404 && approve.errorCode == "JOB_NOT_FOUND")
            }
            // Thread history is rebuilt from codex, with hist_ job ids now.
            let history = try await harness.request("GET", "/v1/threads/\(thread)/events").json
            let data = try #require(history["data"] as? [[String: Any]])
            #expect(!data.isEmpty)
            #expect(data.allSatisfy { ($0["jobId"] as? String)?.hasPrefix("hist_\(thread)_") == true })
            #expect(data.cwPayload("job.finished")?["state"] as? String == "DONE")
            // The thread takes new turns.
            let next = try await harness.startTurn(thread, "hello again")
            try await harness.wait(next, for: "DONE")
        }
    }
}
