import Foundation
import Testing
@testable import TetherSim

/// The benchmark floods (issue 14): frame shapes, counts, and the streams ending when asked to.
@Suite("Benchmark floods")
struct FloodTests {
    @Test("FloodTemplate: one serialization, values spliced in where the markers were")
    func template() {
        let template = FloodTemplate(fieldCount: 2) { field in
            let object: OrderedJSON = ["a": .string(field[0]), "b": .string(field[1]), "c": .string(field[0])]
            return object.data
        }
        var out: [UInt8] = []
        template.append(["x1", "token7 "], to: &out)
        template.append(["y", ""], to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"{"a":"x1","b":"token7 ","c":"x1"}{"a":"y","b":"","c":"y"}"#)
    }

    @Test("FloodShape: parts of 1,000 deltas, or a part per delta")
    func shapes() {
        #expect(FloodShape.longParts.part(ofDelta: 999) == 0 && FloodShape.longParts.part(ofDelta: 1000) == 1)
        #expect(FloodShape.longParts.opensPart(2000) && !FloodShape.longParts.opensPart(2001))
        #expect(FloodShape.newParts.part(ofDelta: 5) == 5 && FloodShape.newParts.opensPart(5))
    }

    // MARK: OpenCode

    /// The `/global/event` payloads of a shaped, closing flood, and how the response ended.
    private func openCodeFlood(_ count: Int, _ shape: FloodShape, legacy: Bool) async throws -> ([[String: Any]], SSEStreamReader.End?) {
        var options = OpenCodeSimulator.Options(legacy: legacy, flood: count)
        options.floodShape = shape
        options.floodClose = true
        var payloads: [[String: Any]] = []
        var end: SSEStreamReader.End?
        try await withSimulator(options) { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            while let payload = try await stream.nextPayload() { payloads.append(payload) }
            end = stream.end
        }
        return (payloads, end)
    }

    @Test("OpenCode new-parts: legacy message.part.updated {part, delta}, a new part each, then idle, then a clean end")
    func openCodeNewParts() async throws {
        let count = 2500
        let (payloads, end) = try await openCodeFlood(count, .newParts, legacy: true)
        #expect(end == .clean)
        #expect(payloads.map(\.type) == ["server.connected"] + Array(repeating: "message.part.updated", count: count)
            + ["session.status", "session.idle"])
        let updates = payloads.filter { $0.type == "message.part.updated" }
        #expect(updates.allSatisfy { $0["id"] == nil })  // legacy: no event ids
        #expect(updates.map { $0.properties["delta"] as? String } == (0..<count).map { "token\($0) " })
        #expect(updates.allSatisfy { $0.part["text"] as? String == $0.properties["delta"] as? String })
        #expect(updates.allSatisfy { $0.part["type"] as? String == "text" })
        let parts = updates.compactMap { $0.part["id"] as? String }
        #expect(Set(parts).count == count)
        #expect(parts == parts.sorted())  // OpenCode ids ascend
        #expect(parts.allSatisfy { $0.hasPrefix("prt_") && $0.count == 30 })
        #expect(Set(updates.compactMap { $0.part["sessionID"] as? String }).count == 1)
    }

    @Test("OpenCode long-parts: 1,000 deltas a part, event ids unless legacy")
    func openCodeLongParts() async throws {
        let count = 2500
        let (payloads, end) = try await openCodeFlood(count, .longParts, legacy: false)
        #expect(end == .clean)
        let updates = payloads.filter { $0.type == "message.part.updated" }
        #expect(updates.count == count)
        let parts = updates.compactMap { $0.part["id"] as? String }
        #expect(Set(parts).count == 3)
        #expect(parts[0] == parts[999] && parts[999] != parts[1000] && parts[1000] == parts[1999] && parts[2000] == parts[2499])
        let ids = payloads.compactMap { $0["id"] as? String }
        #expect(ids.count == payloads.count && Set(ids).count == ids.count)
    }

    @Test("OpenCode churn (`floodTurns`): every L deltas a whole turn in a new session, new messages and a new part")
    func openCodeChurn() async throws {
        var options = OpenCodeSimulator.Options(flood: 25)
        options.floodRate = 5_000
        options.floodTurns = 10
        options.floodClose = true
        var payloads: [[String: Any]] = []
        try await withSimulator(options) { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            while let payload = try await stream.nextPayload() { payloads.append(payload) }
            #expect(stream.end == .clean)
        }
        let turn = ["message.updated", "session.status", "message.updated"]
        let types = payloads.map(\.type)
        #expect(types == ["server.connected"]
            + turn + Array(repeating: "message.part.delta", count: 10) + ["message.part.updated", "session.idle"]
            + turn + Array(repeating: "message.part.delta", count: 10) + ["message.part.updated", "session.idle"]
            + turn + Array(repeating: "message.part.delta", count: 5) + ["message.part.updated", "session.idle"])
        let idles = payloads.filter { $0.type == "session.idle" }.compactMap { $0.properties["sessionID"] as? String }
        #expect(Set(idles).count == 3)
        let deltas = payloads.filter { $0.type == "message.part.delta" }
        #expect(Set(deltas.compactMap { $0.properties["partID"] as? String }).count == 3)
        #expect(Set(deltas.compactMap { $0.properties["messageID"] as? String }).count == 3)
        // Each turn's deltas belong to the session that turn opened, and its final snapshot ends the part.
        let finals = payloads.filter { $0.type == "message.part.updated" }
        #expect(finals.compactMap { $0.part["sessionID"] as? String } == idles)
        #expect(finals.allSatisfy { ($0.part["time"] as? [String: Any])?["end"] != nil })
    }

    @Test("OpenCode: without floodClose the flood's response stays open")
    func openCodeStaysOpen() async throws {
        var options = OpenCodeSimulator.Options(flood: 10)
        options.floodShape = .newParts
        try await withSimulator(options) { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await stream.payloads(through: "session.idle")
            await #expect(throws: (any Error).self) { _ = try await stream.nextFrame(timeout: .milliseconds(300)) }
            #expect(stream.end == nil)
        }
    }

    // MARK: Codex Worker

    @Test("Codex Worker: `flood N` in items of 1,000, `flood N new` an item per delta; the stream ends after job.finished")
    func codexWorker() async throws {
        var options = CodexWorkerSimulator.Options(retention: 10_000)
        options.closeFinishedStreams = true
        try await CWHarness.with(options) { harness in
            for (prompt, items, completed) in [("flood 2500", 3, 3), ("flood 1200 new", 1200, 0)] {
                let thread = try await harness.createThread()
                let job = try await harness.startTurn(thread, prompt)
                try await harness.wait(job, for: "DONE")
                let stream = try await harness.stream("/v1/jobs/\(job)/events")
                let frames = try await stream.events(through: "job.finished")
                let deltas = frames.filter { $0.event == "item.agentMessage.delta" }
                #expect(deltas.compactMap { $0.payload["delta"] as? String } == (0..<(prompt.hasSuffix("new") ? 1200 : 2500)).map { "token\($0) " })
                let agentItems = frames.filter {
                    $0.event == "item.started" && ($0.payload["item"] as? [String: Any])?["type"] as? String == "agentMessage"
                }
                #expect(agentItems.count == items)
                #expect(Set(deltas.compactMap { $0.payload["itemId"] as? String }).count == items)
                let done = frames.filter {
                    $0.event == "item.completed" && ($0.payload["item"] as? [String: Any])?["type"] as? String == "agentMessage"
                }
                #expect(done.count == completed)
                if let first = done.first {
                    #expect((first.payload["item"] as? [String: Any])?["text"] as? String == (0..<1000).map { "token\($0) " }.joined())
                }
                // `: eof`, then the terminating chunk.
                let eof = try #require(try await stream.nextFrame())
                #expect(eof.lines == [": eof"])
                #expect(try await stream.nextFrame() == nil)
                #expect(stream.endedCleanly)
            }
        }
    }

    @Test("Codex Worker: a live stream ends right after job.finished too")
    func codexWorkerLive() async throws {
        var options = CodexWorkerSimulator.Options(pacing: .milliseconds(2))
        options.closeFinishedStreams = true
        try await CWHarness.with(options) { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "hello")
            let stream = try await harness.stream("/v1/jobs/\(job)/events")
            _ = try await stream.events(through: "job.finished")
            #expect(try await stream.nextFrame()?.lines == [": eof"])
            #expect(try await stream.nextFrame() == nil)
            #expect(stream.endedCleanly)
        }
    }

    // MARK: Codex app-server

    @Test("codex: the flood goes to a connection that resumes its thread, after the response; none before")
    func codexAppServer() async throws {
        var options = CodexAppServerSimulator.Options(pacing: .milliseconds(1))
        options.flood = 2500
        try await withCodexAppServer(options) { _, port in
            let peer = try await AppServerWSPeer.connect(port: port)
            try await peer.initialize()
            let listed = try await peer.call(2, "thread/list", [:])
            #expect((member(listed, "result", "data") as? [[String: Any]])?.compactMap { $0["id"] as? String }
                == [CodexAppServerSimulator.floodThreadID])
            #expect(!peer.inbox.received.contains { $0.contains("item/agentMessage/delta") }, "a flood before the resume")
            let resumed = try await peer.call(3, "thread/resume", ["threadId": CodexAppServerSimulator.floodThreadID, "excludeTurns": true])
            #expect(string(resumed, "result", "thread", "id") == CodexAppServerSimulator.floodThreadID)
            let messages = try await peer.untilTurnCompleted()
            let flood = messages.drop { ($0["method"] as? String) != "turn/started" }
            #expect(shape(Array(flood)) == ["turn/started", "item/started agentMessage", "delta×", "item/completed agentMessage", "turn/completed"])
            #expect(flood.filter { ($0["method"] as? String) == "item/agentMessage/delta" }.count == 2500)
            #expect(flood.allSatisfy { string($0, "params", "threadId") == CodexAppServerSimulator.floodThreadID })
            let whole = flood.first { ($0["method"] as? String) == "item/completed" }
            #expect(string(whole, "params", "item", "text") == String(repeating: "flood chunk ", count: 2500))
            // Resumed again (a client's resync): answered, and no second flood.
            _ = try await peer.call(4, "thread/resume", ["threadId": CodexAppServerSimulator.floodThreadID, "excludeTurns": true])
            try await Task.sleep(for: .milliseconds(300))
            let after = try await peer.call(5, "thread/loaded/list", [:])
            #expect(member(after, "result") != nil)
            #expect(peer.inbox.received.count { $0.contains("item/agentMessage/delta") } == 2500, "a second flood")
        }
    }

    // MARK: CodexMonitor

    @Test("CodexMonitor: after auth, turn/started, N deltas in new items, turn/completed, then the connection closes",
          arguments: [FloodShape.newParts, FloodShape.longParts])
    func codexMonitor(_ shape: FloodShape) async throws {
        let count = 2500
        var options = CodexMonitorSimulator.Options(token: CodexMonitorHarness.token)
        options.flood = count
        options.floodShape = shape
        options.floodClose = true
        try await CodexMonitorHarness.run(options) { _, client, _ in
            let lines = try await client.until(event: "turn/completed", timeout: .seconds(10))
            let events = lines.filter { $0.method == "app-server-event" }
            #expect(events.allSatisfy { $0.workspaceID == "ws-1" })
            #expect(events.first?.eventMethod == "turn/started")
            let deltas = events.filter { $0.eventMethod == "item/agentMessage/delta" }
            #expect(deltas.compactMap { $0.eventParams?["delta"] as? String } == (0..<count).map { "token\($0) " })
            let started = events.filter { $0.eventMethod == "item/started" }
            let completed = events.filter { $0.eventMethod == "item/completed" }
            switch shape {
            case .newParts:
                #expect(started.count == count && completed.isEmpty)
            case .longParts:
                #expect(started.count == 3 && completed.count == 3)
                #expect(completed.last?.string("params", "message", "params", "item", "text")
                    == (2000..<count).map { "token\($0) " }.joined())
            }
            #expect(Set(deltas.compactMap { $0.eventParams?["itemId"] as? String }).count == started.count)
            #expect(await client.isClosed(within: .seconds(5)))
        }
    }

    @Test("CodexMonitor: no flood before auth, and without floodClose the connection stays open")
    func codexMonitorWaitsForAuth() async throws {
        var options = CodexMonitorSimulator.Options(token: CodexMonitorHarness.token)
        options.flood = 5
        try await CodexMonitorHarness.run(options, authenticate: false) { _, client, _ in
            let early = await client.read(timeout: .milliseconds(300))
            guard case .timedOut = early else {
                Issue.record("a line before auth: \(early)")
                return
            }
            let (_, response) = try await client.call(1, "auth", #"{"token":"\#(CodexMonitorHarness.token)"}"#)
            #expect(response.value("result", "ok") as? Bool == true)
            _ = try await client.until(event: "turn/completed")
            #expect(!(await client.isClosed(within: .milliseconds(300))))
        }
    }
}
