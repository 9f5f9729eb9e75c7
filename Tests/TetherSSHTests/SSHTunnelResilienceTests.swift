@testable import TetherTestSupport
import Foundation
import Testing
import TetherSSH
#if canImport(Glibc)
import Glibc
#endif

extension TetherSSHSuite {
    @Suite("Resilience")
    struct Resilience {
        @Test("sshd killed and restarted on the same port: in-flight connections close, the tunnel re-establishes on the same local port")
        func reestablishesAfterServerRestart() async throws {
            let fixture = try TunnelFixture()
            let tunnel = fixture.tunnel(fixture.configuration(keepalive: 1))
            defer { tunnel.stop() }
            let port = try await tunnel.start().port

            // A connection in flight when the server dies.
            let inFlight = try await offPool { () -> Int32 in
                let fd = try TestSockets.connect(port: port, timeoutSeconds: 15)
                try TestSockets.sendAll(fd, Array("ping".utf8))
                _ = try TestSockets.read(fd, count: 4)
                return fd
            }
            defer { close(inFlight) }

            fixture.server.kill()
            let (_, end) = try await offPool { TestSockets.readAll(inFlight) }
            #expect(end != .timedOut, "the in-flight connection should be closed when the session dies")

            try fixture.server.start()
            let recovered = try await offPool { () -> Bool in
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    if (try? TestSockets.roundTrip(port: port, payload: Array("again".utf8))) == Array("again".utf8) {
                        return true
                    }
                    usleep(200_000)
                }
                return false
            }
            #expect(recovered)
            #expect(tunnel.localEndpoint?.port == port)
            #expect(fixture.logs.contains("SSH session lost"))
            #expect(fixture.logs.contains("SSH tunnel re-established"))
        }

        @Test("an idle tunnel sleeps in poll(2), yet answers the server's keepalive probes")
        func idleTunnelSleeps() async throws {
            // sshd probes every second and hangs up after two unanswered probes; our own
            // keepalives are off, so only reading the transport while idle keeps the session.
            let fixture = try TunnelFixture(serverConfig: ["ClientAliveInterval 1", "ClientAliveCountMax 2"])
            let tunnel = fixture.tunnel(fixture.configuration(keepalive: 0))
            defer { tunnel.stop() }
            let port = try await tunnel.start().port
            _ = try await offPool { try TestSockets.roundTrip(port: port, payload: [1, 2]) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(ThreadCPU.count(named: "tether-ssh") == 1)
            let before = ThreadCPU.ticks(named: "tether-ssh")
            try await Task.sleep(for: .seconds(4))
            let after = ThreadCPU.ticks(named: "tether-ssh")
            // Clock ticks are 10 ms: a spinning loop would burn about 400 in four seconds.
            #expect(after - before <= 10, "the tunnel thread used \(after - before) ticks while idle")
            #expect(!fixture.logs.contains("SSH session lost"))
            #expect(fixture.logs.contains("drained the SSH transport"))
            let reply = try await offPool { try TestSockets.roundTrip(port: port, payload: [3]) }
            #expect(reply == [3])
        }

        @Test("stop() while the server is unreachable ends the tunnel promptly")
        func stopWhileReconnecting() async throws {
            let fixture = try TunnelFixture()
            let tunnel = fixture.tunnel(fixture.configuration(keepalive: 1))
            _ = try await tunnel.start()
            fixture.server.kill()
            try await Task.sleep(for: .milliseconds(300))
            let began = ContinuousClock.now
            tunnel.stop()
            #expect(began.duration(to: .now) < .seconds(3))
            #expect(tunnel.localEndpoint == nil)
            try await tunnel.waitUntilStopped()
        }

        @Test("a host key that changes while re-establishing stops the tunnel for good")
        func hostKeyChangeWhileReestablishing() async throws {
            let fixture = try TunnelFixture()
            let tunnel = fixture.tunnel(fixture.configuration(keepalive: 1))
            defer { tunnel.stop() }
            _ = try await tunnel.start()
            fixture.server.kill()
            try fixture.server.regenerateHostKey()
            try fixture.server.start()
            await #expect {
                try await tunnel.waitUntilStopped()
            } throws: { error in
                (error as? SSHError)?.kind == .hostKeyMismatch
            }
            #expect(fixture.logs.contains("giving up on the SSH tunnel"))
            #expect(tunnel.localEndpoint == nil)
        }
    }
}

/// CPU time of this process's threads with a given name, from /proc/self/task.
enum ThreadCPU {
    static func count(named name: String) -> Int { tasks(named: name).count }

    static func ticks(named name: String) -> Int {
        var total = 0
        for task in tasks(named: name) {
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) { total += user + system }
        }
        return total
    }

    private static func tasks(named name: String) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }
}
