import FlyingFox
import Foundation
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import TetherNet

/// The libcurl-driven client end to end, against FlyingFox's WebSocket server.
@Suite(.serialized) struct WebSocketConnectionTests {
    let logger = Logger(label: "test")

    func withServer(script: @escaping WebSocketTestServer.Script = { _ in },
                    _ body: (WebSocketTestServer) async throws -> Void) async throws {
        let server = try await WebSocketTestServer.start(script: script)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func connect(_ url: String, configure: (inout WebSocketConnection.Configuration) -> Void = { _ in }) async throws -> WebSocketConnection {
        var configuration = WebSocketConnection.Configuration(url: url, connectTimeout: .seconds(5), handshakeTimeout: .seconds(5),
                                                              closeTimeout: .seconds(2))
        configure(&configuration)
        return try await WebSocketConnection.connect(configuration, logger: logger)
    }

    /// The error `receive()` ends with.
    func receiveError(_ connection: WebSocketConnection) async -> NetError? {
        do {
            while try await connection.receive() != nil {}
            return nil
        } catch let error as NetError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    func closeCode(_ frame: WSFrame?) -> UInt16? {
        guard let frame, frame.opcode == .close, frame.payload.count >= 2 else { return nil }
        return UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
    }

    @Test func echoesTextAndBinaryAndClosesCleanly() async throws {
        try await withServer { server in
            let connection = try await connect(server.base + "/echo")
            try await connection.send(text: "hello ✓")
            #expect(try await connection.receive() == .text("hello ✓"))
            try await connection.send(.binary([0, 1, 2, 255]))
            #expect(try await connection.receive() == .binary([0, 1, 2, 255]))
            // (FlyingFox's echo drops empty messages: the codec tests cover them.)
            await connection.close()
            #expect(try await connection.receive() == nil)
            #expect(connection.peerClose?.code == .normalClosure)
            await #expect(throws: NetError.self) { try await connection.send(text: "late") }
        }
    }

    @Test func largeMessagesAreFragmentedBothWays() async throws {
        try await withServer { server in
            // The client sends 16 KiB frames; FlyingFox echoes in 1000-byte frames.
            let connection = try await connect(server.base + "/echo") { $0.maxFrameSize = 16 << 10 }
            let text = String(repeating: "0123456789abcdéf", count: 12_000)
            try await connection.send(text: text)
            #expect(try await connection.receive() == .text(text))
            await connection.close()
        }
    }

    @Test func answersPingsAndReassemblesAroundControlFrames() async throws {
        let pongs = Mailbox<WSFrame>()
        try await withServer(script: { peer in
            peer.send(.text, Array("Hel".utf8), fin: false)
            peer.send(.ping, Array("p1".utf8))
            peer.send(.continuation, Array("lo".utf8), fin: false)
            peer.send(.pong, [])
            peer.send(.continuation, Array(" world".utf8))
            while let frame = try await peer.next() {
                if frame.opcode == .pong { pongs.put(frame) }
                if frame.opcode == .text { peer.sendClose(1000) }
            }
        }) { server in
            let connection = try await connect(server.base + "/script")
            #expect(try await connection.receive() == .text("Hello world"))
            let pong = try await pongs.wait().first
            #expect(pong?.payload == Data("p1".utf8))
            try await connection.send(text: "done")
            #expect(try await connection.receive() == nil)
            #expect(connection.peerClose == WebSocketClose(code: .normalClosure))
        }
    }

    @Test func theCloseHandshakeCarriesCodeAndReason() async throws {
        let closes = Mailbox<WSFrame>()
        try await withServer(script: { peer in
            while let frame = try await peer.next() {
                if frame.opcode == .close {
                    closes.put(frame)
                    peer.sendClose(4000, "ok")
                    return
                }
            }
        }) { server in
            let connection = try await connect(server.base + "/script")
            await connection.close(WebSocketClose(code: WebSocketCloseCode(4000), reason: "bye"))
            let frame = try await closes.wait().first
            #expect(closeCode(frame) == 4000)
            #expect(frame.map { String(decoding: $0.payload.dropFirst(2), as: UTF8.self) } == "bye")
            // We began the close: whatever code comes back, the end is orderly.
            #expect(try await connection.receive() == nil)
            #expect(connection.peerClose == WebSocketClose(code: WebSocketCloseCode(4000), reason: "ok"))
        }
    }

    @Test func aServerCloseIsEchoedAndAnErrorCodeFailsTheReader() async throws {
        let echoes = Mailbox<WSFrame>()
        try await withServer(script: { peer in
            peer.send(.text, Array("last words".utf8))
            peer.sendClose(1011, "boom")
            while let frame = try await peer.next() { echoes.put(frame) }
        }) { server in
            let connection = try await connect(server.base + "/script")
            #expect(try await connection.receive() == .text("last words"))
            let error = await receiveError(connection)
            #expect(error?.kind == .interrupted)
            #expect(error?.detail.contains("1011 (boom)") == true)
            #expect(closeCode(try await echoes.wait().first) == 1011)
        }
    }

    @Test func aNormalServerCloseEndsCleanly() async throws {
        try await withServer(script: { peer in
            peer.sendClose(1001, "going away")
            while try await peer.next() != nil {}
        }) { server in
            let connection = try await connect(server.base + "/script")
            #expect(try await connection.receive() == nil)
            #expect(connection.peerClose == WebSocketClose(code: .goingAway, reason: "going away"))
        }
    }

    @Test func aDroppedConnectionIsAnAbnormalClosure() async throws {
        try await withServer(script: { peer in
            peer.send(.text, Array("hi".utf8))
            try await Task.sleep(for: .milliseconds(50))
            peer.drop()
        }) { server in
            let connection = try await connect(server.base + "/script")
            #expect(try await connection.receive() == .text("hi"))
            let error = await receiveError(connection)
            #expect(error?.kind == .interrupted)
            #expect(error?.detail.contains("1006") == true)
        }
    }

    /// Each case: what the server sends, the close code the client must answer with, the error kind.
    @Test(arguments: [
        ("oversize", WSFrame(fin: true, opcode: .binary, mask: nil, payload: Data(count: 5000)), UInt16(1009)),
        ("masked", WSFrame(fin: true, opcode: .text, mask: .init(m1: 1, m2: 2, m3: 3, m4: 4), payload: Data("x".utf8)), UInt16(1002)),
        ("bad opcode", WSFrame(fin: true, opcode: .init(3), mask: nil, payload: Data()), UInt16(1002)),
        ("bad utf-8", WSFrame(fin: true, opcode: .text, mask: nil, payload: Data([0xC3, 0x28])), UInt16(1007)),
        ("lone continuation", WSFrame(fin: true, opcode: .continuation, mask: nil, payload: Data("x".utf8)), UInt16(1002)),
    ])
    func protocolViolationsCloseWithTheRightCode(name: String, frame: WSFrame, code: UInt16) async throws {
        let closes = Mailbox<WSFrame>()
        try await withServer(script: { peer in
            peer.send(frame)
            while let frame = try await peer.next() {
                guard frame.opcode == .close else { continue }
                // As a server does: echo the close, then hang up.
                closes.put(frame)
                peer.send(frame)
                return
            }
        }) { server in
            let connection = try await connect(server.base + "/script") { $0.maxMessageSize = 1000 }
            let error = await receiveError(connection)
            #expect(error?.kind == (code == 1009 ? .tooLarge : .other), "\(name)")
            #expect(closeCode(try await closes.wait().first) == code, "\(name)")
        }
    }

    @Test func handshakeRefusals() async throws {
        try await withServer { server in
            do {
                _ = try await connect(server.base + "/plain")
                Issue.record("a plain HTTP route must not open")
            } catch let error as NetError {
                #expect(error.status == 200)
            }
            do {
                _ = try await connect(server.base + "/missing")
                Issue.record("a missing route must not open")
            } catch let error as NetError {
                #expect(error.status == 404)
            }
        }
    }

    @Test func nobodyListening() async throws {
        // Bind a port, then close it: nothing listens there now.
        let server = try await WebSocketTestServer.start()
        let port = server.port
        await server.stop()
        do {
            _ = try await connect("ws://127.0.0.1:\(port)/")
            Issue.record("connected to a closed port")
        } catch let error as NetError {
            #expect(error.kind == .connect)
        }
    }

    @Test func aServerThatNeverAnswersTimesOutTheHandshake() async throws {
        // A listener that accepts (in the kernel's backlog) but never speaks.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = listen(fd, 4)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let started = ContinuousClock.now
        do {
            _ = try await connect("ws://127.0.0.1:\(port)/") { $0.handshakeTimeout = .milliseconds(300) }
            Issue.record("a silent server must not open")
        } catch let error as NetError {
            #expect(error.kind == .timeout)
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func keepsTheLinkAliveWithPingsAndFailsWhenItGoesSilent() async throws {
        let pings = Mailbox<WSFrame>()
        try await withServer(script: { peer in
            // Never answers: the client pings, then gives up.
            while let frame = try await peer.next() { if frame.opcode == .ping { pings.put(frame) } }
        }) { server in
            let connection = try await connect(server.base + "/script") {
                $0.pingInterval = .milliseconds(100)
                $0.liveness = .milliseconds(450)
            }
            let started = ContinuousClock.now
            let error = await receiveError(connection)
            #expect(error?.kind == .stalled)
            #expect(ContinuousClock.now - started >= .milliseconds(400))
            #expect(try await pings.wait(for: 2).count >= 2)
        }
    }

    @Test func pongsKeepALiveLinkAlive() async throws {
        try await withServer(script: { peer in
            while let frame = try await peer.next() {
                if frame.opcode == .ping { peer.send(.pong, Array(frame.payload)) }
                if frame.opcode == .text { peer.send(.text, Array(frame.payload)) }
            }
        }) { server in
            let connection = try await connect(server.base + "/script") {
                $0.pingInterval = .milliseconds(50)
                $0.liveness = .milliseconds(200)
            }
            try await Task.sleep(for: .milliseconds(600))
            try await connection.send(text: "still here")
            #expect(try await connection.receive() == .text("still here"))
            await connection.close()
        }
    }

    /// The server floods `count` messages while the consumer waits 300 ms, then every one is
    /// read, in order; returns the peak the connection held for `receive()`.
    func floodWhileBehind(count: Int, _ opcode: WSFrame.Opcode, payload: @escaping @Sendable (Int) -> [UInt8],
                          expected: (Int) -> WebSocketMessage) async throws -> Int {
        var peak = 0
        try await withServer(script: { peer in
            for index in 0..<count { peer.send(opcode, payload(index)) }
            peer.sendClose(1000)
            while try await peer.next() != nil {}
        }) { server in
            let connection = try await connect(server.base + "/script") { $0.bufferedBytes = 50_000 }
            try await Task.sleep(for: .milliseconds(300))
            var received = 0
            while let message = try await connection.receive() {
                #expect(message == expected(received))
                received += 1
            }
            #expect(received == count)
            peak = connection.peakBufferedBytes
        }
        return peak
    }

    @Test func readingPausesWhileTheConsumerIsBehind() async throws {
        let count = 200
        let peak = try await floodWhileBehind(count: count, .binary, payload: { [UInt8](repeating: UInt8($0 % 256), count: 10_000) },
                                              expected: { .binary([UInt8](repeating: UInt8($0 % 256), count: 10_000)) })
        // Held at most the limit plus what one read turn decodes past it.
        #expect(peak <= 50_000 + 16 * 64 * 1024)
        #expect(peak < count * 10_000 / 2)
    }

    /// Empty messages weigh their slot in the buffer: a flood of them pauses reading at the
    /// bound like any other (weighed by payload alone, they never filled it).
    @Test func aFloodOfEmptyMessagesIsBoundedToo() async throws {
        let peak = try await floodWhileBehind(count: 20_000, .text, payload: { _ in [] }, expected: { _ in .text("") })  // ~1,000 fill it
        #expect(peak >= 25_000, "reading never paused: peak \(peak) bytes")
        #expect(peak <= 50_000 + 16 * 64 * 1024)
    }

    @Test func cancellingAReceiveDoesNotEndTheConnection() async throws {
        try await withServer { server in
            let connection = try await connect(server.base + "/echo")
            let waiting = Task { try await connection.receive() }
            try await Task.sleep(for: .milliseconds(50))
            waiting.cancel()
            await #expect(throws: CancellationError.self) { _ = try await waiting.value }
            try await connection.send(text: "after")
            #expect(try await connection.receive() == .text("after"))
            connection.abort()
            await #expect(throws: NetError.self) { _ = try await connection.receive() }
        }
    }
}
