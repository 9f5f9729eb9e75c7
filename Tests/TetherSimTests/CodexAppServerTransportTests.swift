import Foundation
import Testing
@testable import TetherSim
#if canImport(Glibc)
import Glibc
#endif

/// The transports of `tether simulate codex`: the ws upgrade's refusals, the unix socket, and
/// `--stdio` run as a child process (the built `tether` binary).
@Suite("Codex app-server simulator: transports", .serialized)
struct CodexAppServerTransportTests {
    static let upgrade = [
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
    ]

    @Test("--token: 401 with codex's texts without or with a wrong bearer, any Origin 403, the scheme case-insensitive; /healthz 200")
    func upgradeRefusals() async throws {
        try await withCodexAppServer(.init(token: "s3cret")) { _, port in
            let base = URL(string: "http://127.0.0.1:\(port)")!
            let missing = try await RawHTTP.get(base, "/", headers: Self.upgrade)
            #expect(missing.status == 401)
            #expect(missing.text == "missing websocket bearer token")
            let wrong = try await RawHTTP.get(base, "/", headers: Self.upgrade.merging(["Authorization": "Bearer nope"]) { $1 })
            #expect(wrong.status == 401)
            #expect(wrong.text == "invalid websocket bearer token")
            let origin = try await RawHTTP.get(base, "/", headers: Self.upgrade.merging([
                "Authorization": "Bearer s3cret", "Origin": "http://127.0.0.1:\(port)",
            ]) { $1 })
            #expect(origin.status == 403)
            #expect(origin.body.isEmpty)
            #expect(try await RawHTTP.get(base, "/healthz").status == 200)
            #expect(try await RawHTTP.get(base, "/readyz").status == 200)
            let peer = try await AppServerWSPeer.connect(port: port, path: "/ws", headers: ["Authorization: bearer s3cret"])
            try await peer.initialize()
        }
    }

    @Test("without --token any loopback client may upgrade, on any path")
    func noToken() async throws {
        try await withCodexAppServer { _, port in
            let peer = try await AppServerWSPeer.connect(port: port, path: "/anything")
            try await peer.initialize()
        }
    }

    @Test("--unix PATH: the same protocol over a unix socket, the handshake with codex's frame-size header")
    func unixSocket() async throws {
        let path = NSTemporaryDirectory() + "codex-sim-\(getpid())-\(Int.random(in: 0...99_999)).sock"
        let sim = CodexAppServerSimulator(options: .init(token: "ignored-on-unix", pacing: .milliseconds(1)))
        let url = try await sim.start(unixPath: path)
        #expect(url.absoluteString == "unix://\(path)")
        do {
            let peer = try await AppServerWSPeer.connect(unixPath: path)
            #expect(peer.handshakeHead.lowercased().contains("x-codex-websocket-max-unfragmented-message-bytes: 16777216"))
            try await peer.initialize()
            let thread = try await peer.startThread(2)
            _ = try await peer.startTurn(3, thread: thread, "hello over the socket")
            let messages = try await peer.untilTurnCompleted()
            #expect(string(messages.last, "params", "turn", "status") == "completed")
        } catch {
            await sim.stop()
            throw error
        }
        await sim.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("--stdio: NDJSON both ways, the plain turn's sequence, garbage lines dropped")
    func stdioTurn() async throws {
        let peer = try AppServerStdioPeer(["--pacing", "1"])
        try peer.sendText("not json")
        try await peer.initialize()
        let thread = try await peer.startThread(2)
        _ = try await peer.startTurn(3, thread: thread, "hello there")
        let messages = try await peer.untilTurnCompleted()
        #expect(shape(messages) == [
            "thread/status/changed active[]", "turn/started", "item/started userMessage", "item/completed userMessage",
            "item/started agentMessage", "delta×", "item/completed agentMessage", "thread/tokenUsage/updated",
            "account/rateLimits/updated", "thread/status/changed idle", "turn/completed",
        ])
        #expect(peer.inbox.received.first?.hasPrefix(#"{"id":1,"result":{"userAgent":"tests/0.163.0"#) == true)
        peer.closeInput()
        let status = peer.wait(timeout: .seconds(5))
        #expect(status == 0)
    }

    @Test("the binary over ws: the URL alone on stdout's first line; SIGTERM stops it (status 0)")
    func binaryWebSocket() async throws {
        let process = try AppServerStdioPeer(["--token", "t0k", "--pacing", "1"], stdio: false)
        try await waitUntil { !process.inbox.received.isEmpty }
        let line = try #require(process.inbox.received.first)
        #expect(line.hasPrefix("ws://127.0.0.1:"))
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        let peer = try await AppServerWSPeer.connect(port: port, headers: ["Authorization: Bearer t0k"])
        try await peer.initialize()
        process.signal(SIGTERM)
        #expect(process.wait(timeout: .seconds(5)) == 0)
        #expect(process.inbox.received.count == 1)
    }

    @Test("--drain-on-sigterm: the first SIGTERM drains (new work refused) while an approval waits; the second exits")
    func binaryDrain() async throws {
        let process = try AppServerStdioPeer(["--drain-on-sigterm", "--pacing", "1"], stdio: false)
        try await waitUntil { !process.inbox.received.isEmpty }
        let port = try #require(Int(process.inbox.received.first?.split(separator: ":").last ?? ""))
        let peer = try await AppServerWSPeer.connect(port: port)
        try await peer.initialize()
        let thread = try await peer.startThread(2)
        _ = try await peer.startTurn(3, thread: thread, "cmd")
        _ = try await peer.serverRequest("item/commandExecution/requestApproval")
        process.signal(SIGTERM)
        try await Task.sleep(for: .milliseconds(300))
        #expect(process.status == nil)
        let refused = try await peer.call(4, "turn/start", ["threadId": thread, "input": [["type": "text", "text": "more"]]])
        #expect(member(refused, "error", "data", "reason") as? String == "serverShuttingDown")
        #expect(string(refused, "error", "message") == "Server is draining; retry after reconnecting")
        #expect(member(try await peer.call(5, "thread/read", ["threadId": thread]), "result") != nil)
        process.signal(SIGTERM)
        #expect(process.wait(timeout: .seconds(5)) == 0)
    }

    @Test("--stdio: stdin's EOF ends the process at once (status 0), even while an approval waits")
    func stdioEOF() async throws {
        let peer = try AppServerStdioPeer(["--pacing", "1"])
        try await peer.initialize()
        let thread = try await peer.startThread(2)
        _ = try await peer.startTurn(3, thread: thread, "run the cmd please")
        _ = try await peer.serverRequest("item/commandExecution/requestApproval")
        let closed = ContinuousClock.now
        peer.closeInput()
        let status = peer.wait(timeout: .seconds(5))
        #expect(status == 0)
        #expect(ContinuousClock.now - closed < .seconds(1))
        try await waitUntil { peer.inbox.isEnded }
        #expect(!peer.inbox.takeAll().contains { methodOf($0) == "turn/completed" })
    }
}
