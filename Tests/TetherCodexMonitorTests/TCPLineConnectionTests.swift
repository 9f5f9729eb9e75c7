#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TetherCore
@testable import TetherCodexMonitor
@testable import TetherNet
import TetherStreaming

@Suite(.serialized) struct TCPLineConnectionTests {
    func text(_ line: [UInt8]?) -> String? { line.map { String(decoding: $0, as: UTF8.self) } }

    @Test func linesGoBothWaysWhateverTheChunking() async throws {
        let server = try LocalTCPServer { socket in
            while let line = socket.readLine() {
                socket.write("echo:\(line)\n")
                if line == "split" {
                    // One line across writes, CRLF, and two lines in one write.
                    socket.write("par")
                    usleep(20_000)
                    socket.write("tial\r")
                    usleep(20_000)
                    socket.write("\nx\ny\n")
                }
            }
            socket.close()
        }
        defer { server.stop() }
        let connection = try await TCPLineConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5), logger: quietLogger)
        defer { connection.close() }
        #expect(connection.endpoint == "127.0.0.1:\(server.port)")
        try await connection.send(Array("hello".utf8))
        try await connection.send(Array(#"{"id":1,"method":"ping"}"#.utf8))
        #expect(text(try await connection.receive()) == "echo:hello")
        #expect(text(try await connection.receive()) == #"echo:{"id":1,"method":"ping"}"#)
        try await connection.send(Array("split".utf8))
        var lines: [String] = []
        for try await line in connection.lines {
            lines.append(text(line)!)
            if lines.count == 4 { break }
        }
        #expect(lines == ["echo:split", "partial", "x", "y"])
        await #expect(throws: NetError.self) { try await connection.send(Array("a\nb".utf8)) }
    }

    @Test func aTenMegabyteLineOverAOneMebibyteLimitFailsCleanlyWithBoundedMemory() async throws {
        let server = try LocalTCPServer { socket in
            socket.write("small\n")
            // 10 MB without a newline, written in pieces so the server holds little of it either.
            let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 64 << 10)
            var sent = 0
            while sent < 10_000_000, socket.write(piece) { sent += piece.count }
            socket.write("\nafter\n")
            socket.close()
        }
        defer { server.stop() }
        let limit = 1 << 20
        let connection = try await TCPLineConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5),
                                                             maxLineLength: limit, logger: quietLogger)
        defer { connection.close() }
        #expect(text(try await connection.receive()) == "small")
        let error = await #expect(throws: NetError.self) { _ = try await connection.receive() }
        #expect(error?.kind == .tooLarge)
        #expect(error?.detail.contains("\(limit)") == true)
        // Never more than the limit plus one read was held.
        #expect(connection.peakBufferedBytes <= limit + (64 << 10))
        // The connection is over: no more lines, no more sends.
        await #expect(throws: NetError.self) { _ = try await connection.receive() }
        await #expect(throws: NetError.self) { try await connection.send(Array("x".utf8)) }
    }

    @Test func aSlowConsumerPushesBackInsteadOfBuffering() async throws {
        let server = try LocalTCPServer { socket in
            let line = String(repeating: "z", count: 1023) + "\n"
            for _ in 0..<4096 where socket.write(line) {}
            socket.close()
        }
        defer { server.stop() }
        let budget = 64 << 10
        let connection = try await TCPLineConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5),
                                                             bufferedBytes: budget, logger: quietLogger)
        defer { connection.close() }
        try await Task.sleep(for: .milliseconds(200))  // the server writes 4 MB meanwhile
        var count = 0
        while let line = try await connection.receive() {
            #expect(line.count == 1023)
            count += 1
        }
        #expect(count == 4096)
        #expect(connection.peakBufferedBytes <= budget + (64 << 10) + 1024)
    }

    /// The lines of one read come out as one batch; a cancelled wait ends only that wait.
    @Test func aReadsLinesComeAsOneBatchAndACancelledWaitLeavesTheConnection() async throws {
        let server = try LocalTCPServer { socket in
            socket.write("a\nb\nc\n")
            Thread.sleep(forTimeInterval: 0.3)
            socket.write("d\n")
            Thread.sleep(forTimeInterval: 0.3)
            socket.close()
        }
        defer { server.stop() }
        let connection = try await TCPLineConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5),
                                                             logger: quietLogger)
        defer { connection.close() }
        #expect(text(try await connection.receive()) == "a")
        #expect(try await connection.receiveBatch()?.compactMap(text) == ["b", "c"])
        let waiting = Task { try await connection.receiveBatch() }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        #expect(try await connection.receiveBatch()?.compactMap(text) == ["d"])
        #expect(try await connection.receive() == nil)
    }

    @Test func aPeerThatClosesEndsTheLinesCleanly() async throws {
        let server = try LocalTCPServer { socket in
            socket.write("bye\n")
            socket.close()
        }
        defer { server.stop() }
        let connection = try await TCPLineConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5), logger: quietLogger)
        #expect(text(try await connection.receive()) == "bye")
        #expect(try await connection.receive() == nil)
        connection.close()
        connection.close()  // idempotent
    }

    @Test func aLineCutByTheEndOfTheStreamIsAnError() async throws {
        let server = try LocalTCPServer { socket in
            socket.write("whole\npart")
            socket.close()
        }
        defer { server.stop() }
        let connection = try await TCPLineConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5), logger: quietLogger)
        defer { connection.close() }
        #expect(text(try await connection.receive()) == "whole")
        let error = await #expect(throws: NetError.self) { _ = try await connection.receive() }
        #expect(error?.kind == .interrupted)
    }

    @Test func closingLocallyEndsAWaitingReceive() async throws {
        let server = try LocalTCPServer { socket in _ = socket.readLine() }
        defer { server.stop() }
        let connection = try await TCPLineConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5), logger: quietLogger)
        async let line = connection.receive()
        try await Task.sleep(for: .milliseconds(50))
        connection.close()
        #expect(try await line == nil)
    }

    @Test func refusedAndTimedOutConnectsAreNetErrors() async throws {
        let port = try LocalTCPServer.closedPort()
        let refused = await #expect(throws: NetError.self) {
            _ = try await TCPLineConnection.connect(host: "127.0.0.1", port: port, timeout: .seconds(5), logger: quietLogger)
        }
        #expect(refused?.kind == .connect)
        #expect(refused?.tetherError(service: "CodexMonitor").exitCode == 69)

        // A listener that never accepts, its queue filled: the next SYN goes unanswered.
        let silent = try LocalTCPServer(backlog: 0, accepting: false)
        defer { silent.stop() }
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET, LocalTCPServer.stream, 0)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(silent.port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
        }
        try await Task.sleep(for: .milliseconds(50))
        let clock = ContinuousClock()
        let start = clock.now
        let timedOut = await #expect(throws: NetError.self) {
            _ = try await TCPLineConnection.connect(host: "127.0.0.1", port: silent.port, timeout: .milliseconds(300), logger: quietLogger)
        }
        #expect(timedOut?.kind == .timeout)
        #expect(clock.now - start < .seconds(3))

        let badPort = await #expect(throws: NetError.self) {
            _ = try await TCPLineConnection.connect(host: "127.0.0.1", port: 70_000, logger: quietLogger)
        }
        #expect(badPort?.kind == .connect)
    }

    @Test func theBackendWorksOverRealTCP() async throws {
        let server = try LocalTCPServer { socket in
            while let line = socket.readLine() {
                guard let request = try? JSONParser.parse(line), let id = request["id"]?.serialized else { continue }
                switch request["method"]?.string {
                case "auth":
                    socket.write(request["params"]?["token"] == "s3cret" ? "{\"id\":\(id),\"result\":{\"ok\":true}}\n"
                                                                        : "{\"id\":\(id),\"error\":{\"message\":\"invalid token\"}}\n")
                case "daemon_info":
                    // An event interleaved before the answer, as the daemon may.
                    socket.write(#"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"codex/stderr","params":{"message":"hi"}}}}"# + "\n")
                    socket.write("{\"id\":\(id),\"result\":{\"name\":\"codex-monitor-daemon\",\"version\":\"0.7.1\",\"mode\":\"tcp\"}}\n")
                case "list_workspaces":
                    socket.write("{\"id\":\(id),\"result\":\(FakeDaemon.oneWorkspace)}\n")
                default:
                    socket.write("{\"id\":\(id),\"error\":{\"message\":\"unknown method: \(request["method"]?.string ?? "")\"}}\n")
                }
            }
            socket.close()
        }
        defer { server.stop() }
        let backend = CodexMonitorBackend(configuration: .init(host: "127.0.0.1", port: server.port, token: "s3cret", workspace: "ws-1",
                                                               profile: "monitor"), logger: quietLogger)
        let report = try await backend.check()
        #expect(report.authenticated)
        #expect(report.version == "0.7.1")
        #expect(report.endpoint == "127.0.0.1:\(server.port)")
        #expect(report.details["workspace"] == "ws-1")

        let wrong = CodexMonitorBackend(configuration: .init(host: "127.0.0.1", port: server.port, token: "nope", workspace: nil,
                                                             profile: "monitor"), logger: quietLogger)
        let error = await #expect(throws: TetherError.self) { _ = try await wrong.check() }
        #expect(error?.exitCode == 77)
    }
}
