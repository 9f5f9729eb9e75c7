import Foundation
import Testing
import TetherSim

@Suite("OpenCode simulator: legacy shapes and faults")
struct OpenCodeLegacyAndFaultTests {
    @Test("legacy: no ids, {part, delta} snapshots, permission.updated, {permissionID, response}, {info} without sessionID")
    func legacyShapes() async throws {
        try await withSimulator(.init(legacy: true)) { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            let connected = try #require(try await stream.nextPayload())
            #expect(connected.type == "server.connected")
            #expect(connected["id"] == nil)

            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: cleanPrompt)
            let phase1 = try await stream.payloads(through: "permission.updated")
            #expect(phase1.allSatisfy { $0["id"] == nil })
            #expect(!phase1.contains { $0.type == "message.part.delta" })
            #expect(!phase1.contains { $0.type == "permission.asked" })
            let message = try #require(phase1.first { $0.type == "message.updated" })
            #expect(message.properties["sessionID"] == nil)
            #expect(message.info["sessionID"] as? String == fixtureSession)
            // Each chunk: a snapshot with the text so far plus its delta; no empty start.
            let text = phase1.filter { $0.part["type"] as? String == "text" && $0.part["messageID"] as? String != message.info["id"] as? String }
            #expect(text.first?.part["text"] as? String == text.first?.properties["delta"] as? String)
            #expect(text.first?.properties["delta"] as? String != "")
            #expect(text.last?.properties["delta"] == nil)
            #expect(text.last?.part["text"] as? String == "I'll remove the build directory.")

            let request = try #require(phase1.last?.properties)
            let requestID = try #require(request["id"] as? String)
            #expect(request["type"] as? String == "bash")
            #expect(request["callID"] as? String != nil)

            // Legacy servers list neither permissions nor questions; the reply routes are missing too.
            for target in ["/permission", "/question"] {
                #expect(try await RawHTTP.get(base, target).status == 404)
            }
            #expect(try await RawHTTP.post(base, "/question/que_1/reply", json: #"{"answers":[]}"#).status == 404)
            // The current reply route does not exist on legacy servers; the per-session one does.
            #expect(try await RawHTTP.post(base, "/permission/\(requestID)/reply", json: #"{"reply":"once"}"#).status == 404)
            let reply = try await RawHTTP.post(base, "/session/\(fixtureSession)/permissions/\(requestID)", json: #"{"response":"always"}"#)
            #expect(reply.text == "true")
            let phase2 = try await stream.payloads(through: "session.idle")
            #expect(phase2.first?.properties as? [String: String] == [
                "sessionID": fixtureSession, "permissionID": requestID, "response": "always",
            ])
            let todos = try #require(phase2.first { $0.type == "todo.updated" }?.properties["todos"] as? [[String: Any]])
            #expect(todos.first?["id"] != nil)
            try await simulator.waitUntilIdle(fixtureSession)
        }
    }

    @Test("heartbeats: every 10 s by default, every 30 s from a legacy server, as set when set")
    func heartbeatCadence() {
        #expect(OpenCodeSimulator.Options().heartbeatInterval == .seconds(10))
        #expect(OpenCodeSimulator.Options(legacy: true).heartbeatInterval == .seconds(30))
        #expect(OpenCodeSimulator.Options(heartbeatInterval: .seconds(1), legacy: true).heartbeatInterval == .seconds(1))
    }

    @Test("an `always` reply covers the next matching request: no second ask")
    func alwaysAllowsNextTime() async throws {
        try await withSimulator { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: cleanPrompt)
            let id = try await simulator.waitForPendingPermission()
            _ = try await RawHTTP.post(base, "/permission/\(id)/reply", json: #"{"reply":"always"}"#)
            _ = try await stream.payloads(through: "session.idle")
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: cleanPrompt)
            let second = try await stream.payloads(through: "session.idle")
            #expect(!second.contains { $0.type == "permission.asked" })
            #expect(second.contains { $0.part[path: "state", "status"] as? String == "completed" })
        }
    }

    @Test("dropStreamMidTurn: the stream is cut after some deltas; a reconnecting client resyncs over REST")
    func dropMidTurn() async throws {
        var options = OpenCodeSimulator.Options()
        options.faults.dropStreamMidTurn = true
        try await withSimulator(options) { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            var received: [[String: Any]] = []
            while let payload = try await stream.nextPayload() { received.append(payload) }
            #expect(stream.end == .truncated)
            #expect(received.filter { $0.type == "message.part.delta" }.count == 2)
            #expect(!received.contains { $0.type == "session.idle" })

            // Reconnect: connected, then REST has the whole answer.
            let again = try await RawHTTP.openStream(base, "/global/event")
            defer { again.close() }
            #expect(try await again.nextPayload()?.type == "server.connected")
            try await simulator.waitUntilIdle(fixtureSession)
            let messages = try await RawHTTP.get(base, "/session/\(fixtureSession)/message").array()
            let parts = messages.last?["parts"] as? [[String: Any]] ?? []
            let text = parts.first { $0["type"] as? String == "text" }
            #expect((text?["text"] as? String)?.hasSuffix("the whole answer.") == true)
            #expect(text?[path: "time", "end"] != nil)
        }
    }

    @Test("heartbeatsOnly (#46733): SSE carries connected + heartbeats only; REST still shows the turn")
    func heartbeatsOnly() async throws {
        var options = OpenCodeSimulator.Options(heartbeatInterval: .milliseconds(100))
        options.faults.heartbeatsOnly = true
        try await withSimulator(options) { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            #expect(try await stream.nextPayload()?.type == "server.connected")
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            try await simulator.waitUntilIdle(fixtureSession)
            for _ in 0..<2 {
                #expect(try await stream.nextPayload()?.type == "server.heartbeat")
            }
            let messages = try await RawHTTP.get(base, "/session/\(fixtureSession)/message").array()
            #expect(messages.count == 2)
        }
    }

    @Test("dripBytes: frames arrive one byte per chunk and still decode")
    func dripBytes() async throws {
        var options = OpenCodeSimulator.Options()
        options.faults.dripBytes = true
        options.faults.dripDelay = .microseconds(50)
        try await withSimulator(options) { _, base in
            let stream = try await RawHTTP.openStream(base, "/event")
            defer { stream.close() }
            #expect(try await stream.nextPayload()?.type == "server.connected")
            _ = try await RawHTTP.post(base, "/session", json: #"{"title":"drip"}"#)
            let created = try #require(try await stream.nextPayload(timeout: .seconds(10)))
            #expect(created.type == "session.created")
            #expect(stream.chunkSizes.allSatisfy { $0 == 1 })
            #expect(stream.chunkSizes.count > 100)
        }
    }

    /// As OpenCode does (`SessionPrompt.prompt` stores the message, then joins the running
    /// loop): the second prompt's user message appears at once, and its answer follows the first
    /// turn's with no idle between.
    @Test("a prompt sent while busy is stored at once and answered after the first turn, without idle between")
    func queuedPrompt() async throws {
        try await withSimulator(.init(pacing: .milliseconds(5))) { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            let payloads = try await stream.payloads(through: "session.idle")
            try await simulator.waitUntilIdle(fixtureSession)
            let messages = payloads.filter { $0.type == "message.updated" }.map(\.info)
            let users = messages.filter { $0["role"] as? String == "user" }.compactMap { $0["id"] as? String }
            #expect(Set(users).count == 2)
            let parents = messages.filter { $0["role"] as? String == "assistant" }.compactMap { $0["parentID"] as? String }
            #expect(Set(parents) == Set(users))
            // Both answered before the one idle (`payloads` ends at the first).
            #expect(payloads.filter { $0.type == "session.idle" }.count == 1)
            #expect(try await RawHTTP.get(base, "/session/\(fixtureSession)/message").array().count == 4)
        }
    }
}
