import Foundation
import Logging
import Testing
import TetherSim
@testable import TetherNet

/// libcurl transport against a real local server (the SSE script server), not a mock.
@Suite(.serialized) struct HTTPClientTests {
    let client = HTTPClient(logger: Logger(label: "test"))

    func withServer(_ body: (SSEScriptServer, String) async throws -> Void) async throws {
        let server = SSEScriptServer()
        let url = try await server.start()
        do {
            try await body(server, url.absoluteString)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func performsARequestAndSendsAuthorization() async throws {
        try await withServer { server, base in
            let response = try await client.perform(HTTPRequest(.get, base + "/status/418", authorization: .bearer("t0k")))
            #expect(response.status == 418)
            let request = try await server.waitForRequest { $0.path == "/status/418" }
            #expect(request.header("authorization") == "Bearer t0k")
            _ = try await client.perform(HTTPRequest(.get, base + "/status/200", authorization: .basic(username: "opencode", password: "secret")))
            let basic = try await server.waitForRequest { $0.path == "/status/200" }
            #expect(basic.header("authorization") == "Basic b3BlbmNvZGU6c2VjcmV0")
        }
    }

    @Test func aStreamDeliversEveryByte() async throws {
        try await withServer { _, base in
            let stream = try await client.stream(HTTPRequest(.get, base + "/flood?n=2000&size=100"))
            var decoder = SSEDecoder()
            var count = 0
            for try await chunk in stream {
                chunk.withUnsafeBytes { raw in decoder.feed(raw) { if case .event = $0 { count += 1 } } }
            }
            #expect(count == 2000)
        }
    }

    @Test func redirectsAreFollowedAndAMissingLocationIsAnError() async throws {
        try await withServer { _, base in
            for code in [301, 302, 303, 307, 308] {
                let stream = try await client.stream(HTTPRequest(.get, base + "/redirect?to=/flood%3Fn%3D3&code=\(code)"))
                var bytes: [UInt8] = []
                for try await chunk in stream { bytes += chunk }
                #expect(String(decoding: bytes, as: UTF8.self).contains("id: 3"), "HTTP \(code)")
            }
            await #expect(throws: NetError.self) {
                _ = try await client.stream(HTTPRequest(.get, base + "/redirect?code=302"))
            }
            do {
                _ = try await client.stream(HTTPRequest(.get, base + "/redirect?code=302"))
            } catch let error as NetError {
                #expect(error.kind == .badRedirect)
            }
        }
    }

    @Test func a200ThatIsNotAnEventStreamFails() async throws {
        try await withServer { _, base in
            do {
                _ = try await client.stream(HTTPRequest(.get, base + "/notsse"))
                Issue.record("should have failed")
            } catch let error as NetError {
                #expect(error.kind == .notEventStream("text/plain; charset=utf-8"))
            }
        }
    }

    @Test(arguments: [401, 403, 204, 500])
    func aStatusFailsTheStreamWithItsCode(code: Int) async throws {
        try await withServer { _, base in
            do {
                _ = try await client.stream(HTTPRequest(.get, base + "/status/\(code)"))
                Issue.record("should have failed")
            } catch let error as NetError {
                #expect(error.status == code)
            }
        }
    }

    @Test func aSilentStreamTripsTheLivenessWatchdog() async throws {
        try await withServer { _, base in
            let started = ContinuousClock.now
            let stream = try await client.stream(HTTPRequest(.get, base + "/stall?after=2"), liveness: .milliseconds(1500))
            do {
                for try await _ in stream {}
                Issue.record("should have stalled")
            } catch let error as NetError {
                #expect(error.kind == .stalled)
            }
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test func cancellingAStreamIsPrompt() async throws {
        try await withServer { _, base in
            let stream = try await client.stream(HTTPRequest(.get, base + "/stall?after=1"))
            let task = Task {
                var chunks = 0
                do { for try await _ in stream { chunks += 1 } } catch {}
                return chunks
            }
            try await Task.sleep(for: .milliseconds(200))
            let started = ContinuousClock.now
            task.cancel()
            _ = await task.value
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test func anUnreachableServerIsAConnectError() async throws {
        do {
            _ = try await client.perform(HTTPRequest(.get, "http://127.0.0.1:9/x"))
            Issue.record("should have failed")
        } catch {
            #expect(error.kind == .connect)
            #expect(error.tetherError(service: "x").exitCode == 69)
        }
    }

    @Test func eventSourceResumesWithLastEventIDAndLosesNothing() async throws {
        try await withServer { server, base in
            let source = EventSource(client: client, configuration: .init(
                makeRequest: { last in
                    HTTPRequest(.get, base + "/resume?total=50&dropEvery=7", headers: last.map { [("Last-Event-ID", $0)] } ?? [])
                },
                policy: ReconnectPolicy(configuration: .init(backoff: [.milliseconds(10)], jitter: 0))))
            var ids: [String] = []
            var reconnects = 0
            for try await element in source {
                switch element {
                case .event(let event): ids.append(event.id)
                case .disconnected: reconnects += 1
                default: break
                }
                if ids.count == 50 { break }
            }
            #expect(ids == (1...50).map(String.init))
            #expect(reconnects >= 7)
            let resumed = server.requests.filter { $0.path == "/resume" }.compactMap { $0.header("last-event-id") }
            #expect(resumed.first == "7")
        }
    }

    @Test func eventSourceStopsOnAuthenticationFailure() async throws {
        try await withServer { _, base in
            let source = EventSource(client: client, configuration: .init(makeRequest: { _ in HTTPRequest(.get, base + "/status/401") }))
            do {
                for try await _ in source {}
                Issue.record("should have thrown")
            } catch let error as NetError {
                #expect(error.status == 401)
                #expect(error.tetherError(service: "x").exitCode == 77)
            }
        }
    }
}
