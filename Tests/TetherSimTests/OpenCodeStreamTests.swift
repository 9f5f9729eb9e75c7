import Foundation
import Testing
import TetherSim

@Suite("OpenCode simulator: SSE endpoints (notes §2)")
struct OpenCodeStreamTests {
    @Test("/global/event: headers, server.connected first, every frame exactly `data: {…}\\n\\n`")
    func globalFraming() async throws {
        try await withSimulator { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            #expect(stream.status == 200)
            #expect(stream.headers["content-type"] == "text/event-stream")
            #expect(stream.headers["cache-control"] == "no-cache, no-transform")
            #expect(stream.headers["x-accel-buffering"] == "no")
            #expect(stream.headers["transfer-encoding"] == "chunked")

            let first = try #require(try await stream.nextFrame())
            #expect(first.hasPrefix(#"data: {"payload":{"id":"evt_"#))
            #expect(first.hasSuffix(#""type":"server.connected","properties":{}}}"# + "\n\n"))
            #expect(!first.contains("directory"))

            let created = try await RawHTTP.post(base, "/session", json: #"{"title":"Framing"}"#)
            #expect(created.status == 200)
            let event = try #require(try await stream.nextEvent())
            #expect(event["directory"] as? String == "/home/dev/demo")
            #expect(event["project"] as? String == "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750")
            let payload = try #require(event["payload"] as? [String: Any])
            #expect(payload.type == "session.created")
            #expect((payload["id"] as? String)?.hasPrefix("evt_") == true)
            #expect(payload.info["title"] as? String == "Framing")
            #expect(payload.properties["sessionID"] as? String == payload.info["id"] as? String)
        }
    }

    @Test("heartbeats follow the configured interval, the first one interval after connecting")
    func heartbeatCadence() async throws {
        let interval = Duration.milliseconds(150)
        try await withSimulator(.init(heartbeatInterval: interval)) { _, base in
            // Timed from before the request: the server's clock starts after it, so this bounds from below.
            let start = ContinuousClock.now
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            #expect(try await stream.nextPayload()?.type == "server.connected")
            var arrivals: [Duration] = []
            for _ in 0..<3 {
                let beat = try #require(try await stream.nextEvent(timeout: .seconds(3)))
                #expect(beat["directory"] == nil)
                #expect((beat["payload"] as? [String: Any])?.type == "server.heartbeat")
                arrivals.append(ContinuousClock.now - start)
            }
            #expect(arrivals[0] >= interval)
            #expect(arrivals[2] >= interval * 3)
        }
    }

    @Test("/event?directory=: bare payloads of that directory only; ends cleanly after server.instance.disposed")
    func instanceEventFilteringAndClose() async throws {
        try await withSimulator(.init(heartbeatInterval: .seconds(60))) { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/event?directory=%2Fwork%2Fother")
            defer { stream.close() }
            let connected = try #require(try await stream.nextEvent())
            #expect(connected.type == "server.connected")
            #expect(connected["payload"] == nil)

            // A session in the server's own directory is not this stream's business…
            _ = try await RawHTTP.post(base, "/session", json: #"{"title":"elsewhere"}"#)
            // …one created for /work/other is, and arrives bare.
            let mine = try await RawHTTP.post(base, "/session", json: #"{"title":"mine"}"#, headers: ["x-opencode-directory": "/work/other"])
            #expect(try mine.object()["directory"] as? String == "/work/other")
            let created = try #require(try await stream.nextEvent())
            #expect(created.type == "session.created")
            #expect(created.info["title"] as? String == "mine")

            // Disposing another directory changes nothing; disposing ours ends the stream.
            await simulator.disposeInstance()
            let disposed = try await RawHTTP.post(base, "/instance/dispose?directory=%2Fwork%2Fother")
            #expect(disposed.text == "true")
            let last = try #require(try await stream.nextEvent())
            #expect(last.type == "server.instance.disposed")
            #expect(last.properties["directory"] as? String == "/work/other")
            #expect(try await stream.nextFrame() == nil)
            #expect(stream.end == .clean)

            let listed = try await RawHTTP.get(base, "/session?directory=%2Fwork%2Fother").array()
            #expect(listed.map { $0["title"] as? String } == ["mine"])
        }
    }

    @Test("serveGlobalEvent = false: /global/event is 404, /event still streams")
    func globalEventDisabled() async throws {
        try await withSimulator(.init(serveGlobalEvent: false)) { _, base in
            #expect(try await RawHTTP.get(base, "/global/event").status == 404)
            let stream = try await RawHTTP.openStream(base, "/event")
            defer { stream.close() }
            #expect(try await stream.nextEvent()?.type == "server.connected")
        }
    }

    @Test("flood: server.connected, N deltas, session.status idle, session.idle")
    func flood() async throws {
        let count = 2000
        try await withSimulator(.init(flood: count)) { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            #expect(try await stream.nextPayload()?.type == "server.connected")
            var deltas = 0
            var partIDs = Set<String>()
            while let payload = try await stream.nextPayload() {
                guard payload.type == "message.part.delta" else {
                    #expect(payload.type == "session.status")
                    break
                }
                deltas += 1
                partIDs.insert(payload.properties["partID"] as? String ?? "")
            }
            #expect(try await stream.nextPayload()?.type == "session.idle")
            #expect(deltas == count)
            #expect(partIDs.count == 1)
            // Batched: far fewer chunks than frames.
            #expect(stream.chunkSizes.count < count / 10)

            // The part the deltas target exists over REST.
            let sessions = try await RawHTTP.get(base, "/session").array()
            let flood = try #require(sessions.first { $0["title"] as? String == "Flood" })
            let messages = try await RawHTTP.get(base, "/session/\(flood["id"] as? String ?? "")/message").array()
            let parts = messages.flatMap { $0["parts"] as? [[String: Any]] ?? [] }
            #expect(parts.contains { partIDs.contains($0["id"] as? String ?? "") })
        }
    }
}
