import Foundation
import Testing
import TetherSim

@Suite("SSEScriptServer")
struct SSEScriptServerTests {
    private func withServer(_ body: (SSEScriptServer, URL) async throws -> Void) async throws {
        let server = SSEScriptServer()
        let base = try await server.start()
        do {
            try await body(server, base)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("/script/NAME sends the chunks byte for byte, one write each, then closes cleanly; headers are recorded")
    func script() async throws {
        try await withServer { server, base in
            let chunks: [SSEScriptChunk] = [
                .byteOrderMark,
                SSEScriptChunk(": comment\r\nretry: 1500\r", delay: .milliseconds(20)),
                SSEScriptChunk("\nid: 7\ndata: line one\n", delay: .milliseconds(20)),
                SSEScriptChunk("data: line two\r\n\r\n", delay: .milliseconds(20)),
            ]
            server.setScript("mixed", chunks)
            let stream = try await RawHTTP.openStream(base, "/script/mixed", headers: [
                "Authorization": "Bearer t0k", "Last-Event-ID": "6",
            ])
            defer { stream.close() }
            #expect(stream.status == 200)
            #expect(stream.headers["content-type"] == "text/event-stream")
            #expect(stream.headers["cache-control"] == "no-cache")
            let body = ChunkedBody(connection: stream.connection)
            var received: [Data] = []
            while let chunk = try await body.nextChunk() { received.append(chunk) }
            #expect(received == chunks.map { Data($0.bytes) })

            let request = try await server.waitForRequest { $0.path == "/script/mixed" }
            #expect(request.header("authorization") == "Bearer t0k")
            #expect(request.header("Last-Event-ID") == "6")
            #expect(request.header("accept") == "text/event-stream")
            #expect(try await RawHTTP.get(base, "/script/unknown").status == 404)
        }
    }

    @Test("/flood?n=N&size=S: N frames of about S bytes, batched into large writes")
    func flood() async throws {
        try await withServer { _, base in
            // The second asks for the flood just rendered (served again), the third for another.
            for (count, size) in [(5000, 300), (5000, 300), (7, 40)] {
                let stream = try await RawHTTP.openStream(base, "/flood?n=\(count)&size=\(size)")
                defer { stream.close() }
                var frames: [String] = []
                while let frame = try await stream.nextFrame() { frames.append(frame) }
                #expect(frames.count == count)
                #expect(frames.first?.hasPrefix("id: 1\ndata: {\"i\":1,\"pad\":\"xx") == true)
                #expect(frames.last?.hasPrefix("id: \(count)\ndata: {\"i\":\(count),\"pad\":\"xx") == true)
                #expect(frames.allSatisfy { $0.utf8.count == size && $0.hasSuffix("x\"}\n\n") })
                #expect(stream.end == .clean)
                #expect(stream.chunkSizes.count < 100)
            }
        }
    }

    @Test("/resume honours Last-Event-ID and closes abruptly every K events")
    func resume() async throws {
        try await withServer { server, base in
            var lastID: String?
            var ids: [Int] = []
            var truncations = 0
            for _ in 0..<10 {
                let headers = lastID.map { ["Last-Event-ID": $0] } ?? [:]
                let stream = try await RawHTTP.openStream(base, "/resume?total=10&dropEvery=4", headers: headers)
                defer { stream.close() }
                if stream.status == 204 { break }
                while let frame = try await stream.nextFrame() {
                    let id = frame.split(separator: "\n").first { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) }
                    lastID = id
                    ids.append(Int(id ?? "") ?? -1)
                }
                if stream.end == .truncated { truncations += 1 }
                if ids.last == 10 { break }
            }
            #expect(ids == Array(1...10))
            #expect(truncations == 2)
            let resumed = server.requests.filter { $0.path == "/resume" }.compactMap { $0.header("last-event-id") }
            #expect(resumed == ["4", "8"])
            let done = try await RawHTTP.get(base, "/resume?total=10", headers: ["Last-Event-ID": "10"])
            #expect(done.status == 204)
        }
    }

    @Test("/status, /redirect, /notsse")
    func statusRedirectNotSSE() async throws {
        try await withServer { _, base in
            #expect(try await RawHTTP.get(base, "/status/401").status == 401)
            let noContent = try await RawHTTP.get(base, "/status/204")
            #expect(noContent.status == 204)
            #expect(noContent.body.isEmpty)
            #expect(try await RawHTTP.get(base, "/status/500").status == 500)
            let redirect = try await RawHTTP.get(base, "/redirect?to=/flood%3Fn%3D1&code=307")
            #expect(redirect.status == 307)
            #expect(redirect.headers["location"] == "/flood?n=1")
            let bare = try await RawHTTP.get(base, "/redirect")
            #expect(bare.status == 302)
            #expect(bare.headers["location"] == nil)
            let notSSE = try await RawHTTP.get(base, "/notsse")
            #expect(notSSE.status == 200)
            #expect(notSSE.headers["content-type"]?.hasPrefix("text/plain") == true)
        }
    }

    @Test("/stall sends N events then holds the connection open; /ticker paces its events")
    func stallAndTicker() async throws {
        try await withServer { _, base in
            let stall = try await RawHTTP.openStream(base, "/stall?after=2")
            defer { stall.close() }
            #expect(try await stall.nextFrame() == "id: 1\ndata: {\"i\":1}\n\n")
            #expect(try await stall.nextFrame() != nil)
            await #expect(throws: RawConnection.Failure.self) {
                _ = try await stall.nextFrame(timeout: .milliseconds(300))
            }
            #expect(stall.end == nil)

            let ticker = try await RawHTTP.openStream(base, "/ticker?interval_ms=50&count=3")
            defer { ticker.close() }
            let start = ContinuousClock.now
            var frames: [String] = []
            while let frame = try await ticker.nextFrame() { frames.append(frame) }
            #expect(frames.count == 3)
            #expect(frames[2].hasPrefix("id: 3\ndata: {\"i\":3,\"ts\":\""))
            #expect(frames[2].contains("Z\"}"))
            #expect(ContinuousClock.now - start >= .milliseconds(140))
            #expect(ticker.end == .clean)
        }
    }
}
