import Foundation
import Logging
import Synchronization
import Testing
import TetherAdapterSupport
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

    /// libcurl does not follow a `Location` that is present but empty: that is a redirect
    /// without a location, the same clear error as a missing one (65), for a stream, a REST
    /// call and an EventSource alike — not a stream that "ended before it began" and is retried.
    @Test(arguments: [301, 302, 303, 307, 308])
    func anEmptyLocationIsARedirectWithoutOne(code: Int) async throws {
        try await withServer { server, base in
            let url = base + "/redirect?to=&code=\(code)"
            do {
                _ = try await client.stream(HTTPRequest(.get, url))
                Issue.record("the stream should have failed")
            } catch let error as NetError {
                #expect(error.kind == .badRedirect, "\(error)")
                #expect(error.detail.contains("empty Location"))
                #expect(error.tetherError(service: "x").exitCode == 65)
            }
            do {
                _ = try await client.perform(HTTPRequest(.get, url))
                Issue.record("the request should have failed")
            } catch let error as NetError {
                #expect(error.kind == .badRedirect, "\(error)")
            }
            let source = EventSource(client: client, configuration: .init(
                makeRequest: { _ in HTTPRequest(.get, url) },
                policy: ReconnectPolicy(configuration: .init(backoff: [.milliseconds(10)], jitter: 0))))
            var connects = 0
            do {
                for try await element in source {
                    if case .connecting = element { connects += 1 }
                    if connects > 3 { break }
                }
                Issue.record("the event source should have thrown")
            } catch let error as NetError {
                #expect(error.kind == .badRedirect)
            }
            // Given up at once: no reconnect loop to the same URL.
            #expect(connects <= 1)
            #expect(server.requests.filter { $0.path == "/redirect" }.count == 3)
        }
    }

    /// A server resets the last event id with an empty `id:` in a later chunk than the event
    /// that set it: the reconnect sends no `Last-Event-ID` at all (not the old id, not an empty
    /// header). A reset from the first connection's seed (`lastEventID: ""`) sends none either.
    @Test func anEmptyIDResetsTheLastEventIDForTheReconnect() async throws {
        try await withServer { server, base in
            server.setScript("reset", [
                SSEScriptChunk("id: 5\ndata: a\n\n"),
                SSEScriptChunk("id:\ndata: b\n\n", delay: .milliseconds(50)),
            ])
            server.setScript("set", [SSEScriptChunk("id: 5\ndata: a\n\n")])
            let cases: [(script: String, expected: String?)] = [("reset", nil), ("set", "5")]
            for (script, expected) in cases {
                let source = EventSource(client: client, configuration: .init(
                    makeRequest: { last in
                        HTTPRequest(.get, base + "/script/\(script)", headers: last.map { [("Last-Event-ID", $0)] } ?? [])
                    },
                    lastEventID: "",
                    policy: ReconnectPolicy(configuration: .init(backoff: [.milliseconds(10)], jitter: 0))))
                var opens = 0
                for try await element in source {
                    if case .open = element { opens += 1 }
                    if opens == 2 { break }
                }
                let requests = server.requests.filter { $0.path == "/script/\(script)" }
                #expect(requests.count == 2)
                #expect(requests.first?.header("last-event-id") == nil)
                #expect(requests.last?.header("last-event-id") == expected, "\(script)")
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

    /// A reader that stops outside `next()` — its task returned, or was cancelled before it
    /// asked — stops the transfer: a stream nobody reads would keep its connection, and its
    /// thread blocked on the full buffer, for good.
    @Test func aStreamNobodyReadsAnyMoreStopsItsTransfer() async throws {
        try await withServer { _, base in
            func isStopped(_ channel: HTTPByteStream.Channel) -> Bool {
                channel.control?.cancelled.load(ordering: .relaxed) == true
            }
            func readOneChunkThenLeave() async throws -> HTTPByteStream.Channel {
                let stream = try await client.stream(HTTPRequest(.get, base + "/ticker?interval_ms=5"))
                var chunks = stream.makeAsyncIterator()
                _ = try await chunks.next()
                #expect(!isStopped(stream.channel))
                return stream.channel
            }
            let left = try await readOneChunkThenLeave()
            #expect(isStopped(left))

            let kept = try await client.stream(HTTPRequest(.get, base + "/ticker?interval_ms=5"))
            await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                var chunks = kept.makeAsyncIterator()
                await #expect(throws: CancellationError.self) { _ = try await chunks.next() }
            }.value
            #expect(isStopped(kept.channel))
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

    /// libcurl reports a TLS handshake that was cut (a restarting TLS front end) and one that
    /// can never work (TLS to a plain-HTTP port) with the same code, 35: the first is worth a
    /// reconnect, the second is not.
    @Test(arguments: [(HandshakeBreaker.Mode.reset, true), (.close, true), (.plainHTTP, false)])
    func aCutTLSHandshakeIsRetryableAndAPlainPortIsNot(mode: HandshakeBreaker.Mode, retryable: Bool) async throws {
        let server = try HandshakeBreaker(mode)
        defer { server.stop() }
        do {
            _ = try await client.perform(HTTPRequest(.get, "https://127.0.0.1:\(server.port)/x"))
            Issue.record("should have failed")
        } catch {
            #expect(error.kind == (retryable ? .interrupted : .tls), "\(error.detail)")
            #expect(error.isRetryable == retryable)
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
        try await withServer { server, base in
            let source = EventSource(client: client, configuration: .init(makeRequest: { _ in HTTPRequest(.get, base + "/status/401") }))
            var iterator = source.makeAsyncIterator()
            do {
                while try await iterator.next() != nil {}
                Issue.record("should have thrown")
            } catch let error as NetError {
                #expect(error.status == 401)
                #expect(error.tetherError(service: "x").exitCode == 77)
            }
            // Done after it threw: asked again, it ends instead of sending the refused credentials again.
            #expect(try await iterator.next() == nil)
            #expect(server.requests.filter { $0.path == "/status/401" }.count == 1)
        }
    }
}

/// A loopback TCP server that breaks every TLS handshake: it reads the ClientHello, then resets
/// the connection, closes it, or answers as a plain HTTP server would.
final class HandshakeBreaker: @unchecked Sendable {
    enum Mode: Sendable { case reset, close, plainHTTP }

    let port: Int
    private let fd: Int32

    init(_ mode: Mode) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        fd = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, 8) == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread {
            // This thread closes the listener, once `stop()` has shut it down: closed any earlier,
            // its number could be reused by another test's socket while this loop still accepts.
            defer { close(listener) }
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }  // stop() shut the listener
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = recv(client, &buffer, buffer.count, 0)
                switch mode {
                case .reset:
                    var option = linger(l_onoff: 1, l_linger: 0)
                    setsockopt(client, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
                case .close:
                    break
                case .plainHTTP:
                    let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
                    _ = send(client, answer, answer.count, Int32(MSG_NOSIGNAL))
                }
                close(client)
            }
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))  // wakes the accept loop, which closes it
    }
}
