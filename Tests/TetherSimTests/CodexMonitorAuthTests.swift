import Foundation
import Testing
@testable import TetherSim

@Suite("CodexMonitor simulator: framing and auth")
struct CodexMonitorAuthTests {
    @Test("unauthorized before auth; a wrong token keeps the connection open; a later auth is an unknown method")
    func authHandshake() async throws {
        try await CodexMonitorHarness.run(authenticate: false) { simulator, client, _ in
            let early = try await client.call(1, "list_workspaces", "{}").response
            #expect(early.errorMessage == "unauthorized")
            #expect(early.text == #"{"id":1,"error":{"message":"unauthorized"}}"#)

            let wrong = try await client.call(1, "auth", #"{"token":"wrong"}"#).response
            #expect(wrong.errorMessage == "invalid token")

            // Still open: a bare string token is accepted too.
            let good = try await client.call(1, "auth", #""s3cret""#).response
            #expect(good.text == #"{"id":1,"result":{"ok":true}}"#)

            let ping = try await client.call(2, "ping").response
            #expect(ping.text == #"{"id":2,"result":{"ok":true}}"#)

            let again = try await client.call(3, "auth", #"{"token":"s3cret"}"#).response
            #expect(again.errorMessage == "unknown method: auth")
            #expect(simulator.receivedRequests.map(\.method) == ["list_workspaces", "auth", "auth", "ping", "auth"])
        }
    }

    @Test("a daemon without a token answers auth with unknown method")
    func insecureNoAuth() async throws {
        try await CodexMonitorHarness.run(.init(token: nil)) { _, client, _ in
            let auth = try await client.call(1, "auth", #"{"token":"anything"}"#).response
            #expect(auth.errorMessage == "unknown method: auth")
            let workspaces = try await client.call(2, "list_workspaces").response
            #expect(workspaces.value("result", "0", "id") as? String == "ws-1")
        }
    }

    @Test("events reach every authenticated connection and none before auth")
    func noEventsBeforeAuth() async throws {
        try await CodexMonitorHarness.run { _, client, port in
            let watcher = try CodexMonitorLineClient(port: port)
            defer { watcher.close() }
            let stranger = try CodexMonitorLineClient(port: port)
            defer { stranger.close() }
            _ = try await watcher.call(1, "auth", #"{"token":"s3cret"}"#)

            let (before, response) = try await client.call(2, "connect_workspace", #"{"id":"ws-1"}"#)
            #expect(response.text == #"{"id":2,"result":{"ok":true}}"#)
            #expect(before.eventMethods == ["codex/connected"])
            #expect(before.first?.workspaceID == "ws-1")

            let seen = try await watcher.next()
            #expect(seen.eventMethod == "codex/connected")
            #expect(seen.string("params", "message", "params", "workspaceId") == "ws-1")

            // The unauthenticated connection got nothing: its first line is the answer to its ping.
            let first = try await stranger.call(9, "ping").response
            #expect(first.errorMessage == "unauthorized")
            #expect(stranger.transcript.current.count == 1)
        }
    }

    @Test("non-integer ids execute silently; unparseable and empty lines are ignored")
    func idRules() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            client.send("this is not json")
            client.send("")
            client.send("   ")
            client.send(#"{"id":"5","method":"ping"}"#)
            client.send(#"{"id":1.5,"method":"ping"}"#)
            client.send(#"{"id":-1,"method":"ping"}"#)
            client.send(#"{"method":"ping"}"#)
            // Executed without a response: the workspace gets connected (the event shows it).
            client.send(#"{"id":"c","method":"connect_workspace","params":{"id":"ws-1"}}"#)
            let lines = try await client.call(9, "ping").before
            #expect(lines.count == 1)
            #expect(lines.first?.eventMethod == "codex/connected")
            let workspaces = try await client.call(10, "list_workspaces").response
            #expect(workspaces.value("result", "0", "connected") as? Bool == true)
            // CRLF line endings are trimmed away.
            client.sendRaw(Array("{\"id\":11,\"method\":\"ping\"}\r\n".utf8))
            #expect(try await client.next().id == 11)
        }
    }

    @Test("lines have no maximum length")
    func hugeLine() async throws {
        try await CodexMonitorHarness.run { _, client, _ in
            let padding = String(repeating: "x", count: 600_000)
            let response = try await client.call(2, "ping", #"{"padding":"\#(padding)"}"#).response
            #expect(response.text == #"{"id":2,"result":{"ok":true}}"#)
        }
    }

    @Test("stop() closes open connections")
    func stopClosesConnections() async throws {
        let simulator = CodexMonitorSimulator(options: .init(token: nil))
        let (host, port) = try await simulator.start()
        #expect(host == "127.0.0.1")
        let client = try CodexMonitorLineClient(port: port)
        defer { client.close() }
        #expect(try await client.call(1, "ping").response.id == 1)
        #expect(simulator.openConnections == 1)
        await simulator.stop()
        #expect(await client.isClosed())
        #expect(simulator.endpoint == nil)
    }

    @Test("dropConnectionAfter closes the first connection after N lines, once")
    func dropAfterLines() async throws {
        try await CodexMonitorHarness.run(.init(token: "s3cret", dropConnectionAfter: 3)) { simulator, client, port in
            // Line 1 was the auth response.
            _ = try await client.call(2, "ping")
            _ = try await client.call(3, "ping")
            client.send(#"{"id":4,"method":"ping"}"#)
            #expect(await client.isClosed())

            let second = try CodexMonitorLineClient(port: port)
            defer { second.close() }
            _ = try await second.call(1, "auth", #"{"token":"s3cret"}"#)
            for id in 2...5 {
                #expect(try await second.call(id, "ping").response.id == id)
            }
            #expect(simulator.acceptedConnections == 2)
        }
    }
}
