import Foundation
import Testing
import TetherCore
import TetherSim
#if canImport(Glibc)
import Glibc
#endif
@testable import TetherTestSupport
import TetherStreaming

/// A fleet (README, "Running a fleet"): two `tether serve` replicas, the real binary, over one
/// PostgreSQL (the run's throwaway cluster) and one OpenCode simulator.
@Suite(.serialized) struct FleetCLITests {
    struct Replica {
        let process: TetherProcess
        let url: String
        /// The first line it printed.
        let line: String
    }

    static func start(config: TemporaryConfig, database: String) async throws -> Replica {
        let process = try TetherProcess(["-v", "--config", config.path, "serve", "--listen", "127.0.0.1:0", "--db", database],
                                        environment: ["OC_TEST_PASSWORD": "secret"])
        let line: String
        do {
            line = try await process.waitForLine { $0.hasPrefix("{\"listen\"") }
        } catch {
            process.stop()  // it never said where it listens: nobody else holds it to stop it
            throw error
        }
        let shown = try JSONParser.parse(line)
        return Replica(process: process, url: shown["listen"]?.string ?? "", line: line)
    }

    /// A config whose one profile nothing answers (the database is what a test is about), and
    /// the run's PostgreSQL.
    static func unreachableProfileAndCluster() throws -> (TemporaryConfig, PostgresTestCluster) {
        let config = try TemporaryConfig("""
            [profiles.oc]
            backend = "opencode"
            url = "http://127.0.0.1:9"
            """)
        return (config, try PostgresTestCluster.start())
    }

    static func waitUntil(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw FixtureError("timed out after \(timeout) waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The replica holding the profile is killed (-9) mid-turn; the other takes the subscription
    /// over within 15 s and logs the rest of the turn from the backend's history; a client that
    /// resumes on the survivor with Last-Event-ID gets every event after it once, in seq order.
    /// On the way: an event the first replica appends reaches the second's clients.
    @Test func aKilledReplicasProfileIsTakenOverAndAResumedStreamLosesNothing() async throws {
        let simulator = OpenCodeSimulator(options: OpenCodeSimulator.Options(password: "secret", pacing: .milliseconds(400)))
        let simulated = try await simulator.start()
        var replicas: [Replica] = []
        do {
            let config = try TemporaryConfig("""
                [profiles.oc]
                backend = "opencode"
                url = "\(simulated.absoluteString)"
                password = { env = "OC_TEST_PASSWORD" }
                """)
            let database = try PostgresTestCluster.freshDatabase()
            let holder = try await Self.start(config: config, database: database)
            replicas.append(holder)
            try await Self.waitUntil("the first replica subscribes", timeout: .seconds(15)) {
                holder.process.stderrText.contains("this replica subscribes to the profile")
            }
            let survivor = try await Self.start(config: config, database: database)
            replicas.append(survivor)
            try await Self.waitUntil("the second replica waits for the lease", timeout: .seconds(15)) {
                survivor.process.stderrText.contains("another replica subscribes to the profile")
            }
            #expect((try? JSONParser.parse(holder.line))?["db"]?.string?.hasPrefix("postgres://tether@127.0.0.1:") == true, "\(holder.line)")

            let created = try await Curl.request("POST", survivor.url + "/v1/profiles/oc/sessions", json: "{\"title\":\"fleet\"}")
            let session = try #require(created.json?["id"]?.string, "\(created.status) \(created.body)")
            let turn = try await Curl.request("POST", survivor.url + "/v1/profiles/oc/sessions/\(session)/turns",
                                              json: "{\"text\":\"Say hello in three words and then a few more\"}")
            #expect(turn.status == 202, "\(turn.body)")

            // The holder appends the turn's deltas; the survivor's clients get them within a second.
            var firstDelta: Int64 = 0
            try await Self.waitUntil("a delta of the turn reaches the second replica", timeout: .seconds(10)) {
                let logged = try await GatewayFixture.logged(at: survivor.url, type: "part.delta")
                firstDelta = logged.first { $0["session"]?.string == session }?["seq"]?.int ?? 0
                return firstDelta > 0
            }
            let cursor = firstDelta - 1
            let live = try Curl.start("GET", survivor.url + "/v1/events", headers: ["Last-Event-ID: \(cursor)"], maxTime: 90)

            // Mid-turn: its end is not logged yet.
            let endedEarly = try await GatewayFixture.logged(at: survivor.url, type: "turn.completed")
            #expect(!endedEarly.contains { $0["session"]?.string == session }, "the turn ended before the kill: not a failover test")
            holder.process.kill()
            _ = try? await holder.process.finish()
            let killed = ContinuousClock.now
            try await Self.waitUntil("the survivor takes the profile over", timeout: .seconds(15)) {
                survivor.process.stderrText.contains("this replica subscribes to the profile")
            }
            #expect(ContinuousClock.now - killed < .seconds(15))
            var completedSeq: Int64 = 0
            try await Self.waitUntil("the turn's end is logged", timeout: .seconds(30)) {
                let logged = try await GatewayFixture.logged(at: survivor.url, type: "turn.completed")
                completedSeq = logged.first { $0["session"]?.string == session }?["seq"]?.int ?? 0
                return completedSeq > 0
            }
            let last = try await GatewayFixture.logged(at: survivor.url).compactMap { $0["seq"]?.int }.last ?? 0
            let reply = try await live.stop(onceItHas: last, timeout: .seconds(30))
            let ids = reply.sseEvents.compactMap(\.id)
            // Every seq after the cursor, once, in order: the seq space has no gaps across replicas.
            #expect(ids == Array((cursor + 1)...last), "\(ids)")
            let events = try reply.sseEvents.map { try JSONParser.parse($0.data) }
            let ends = events.filter { $0["type"] == "turn.completed" && $0["session"]?.string == session }
            #expect(ends.count == 1)
            let parts = events.filter { $0["type"] == "part.completed" }.compactMap { $0["part"]?.string }
            #expect(Set(parts).count == parts.count, "a part.completed logged twice: \(parts)")
            #expect(!parts.isEmpty)
        } catch {
            for (index, replica) in replicas.enumerated() {
                replica.process.kill()
                Issue.record("replica \(index)'s stderr:\n\(replica.process.stderrText)")
            }
            await simulator.stop()
            throw error
        }
        for replica in replicas {
            replica.process.terminate()
            _ = try? await replica.process.finish()
        }
        await simulator.stop()
    }

    /// The database goes down while a replica runs: a request that needs it gets a 503 problem
    /// saying what to check within the store's deadline (10 s), rather than hang until the server
    /// is back; once it is back, the same request answers; once it is gone for good, SIGTERM still
    /// ends the replica.
    @Test func aDatabaseDownMidRunAnswers503InTimeAndRecovers() async throws {
        let (config, cluster) = try Self.unreachableProfileAndCluster()
        let proxy = try FaultProxy(upstreamPort: cluster.port, framing: .lines, isStream: { _ in false })
        defer { proxy.stop() }
        let database = try PostgresTestCluster.freshDatabase().replacingOccurrences(of: ":\(cluster.port)/", with: ":\(proxy.port)/")
        let replica = try await Self.start(config: config, database: database)
        defer { replica.process.stop() }
        let before = try await Curl.request("GET", replica.url + "/v1/events?format=json")
        #expect(before.status == 200, "\(before.body)")

        let down = Task { try await proxy.restart(downFor: .seconds(16)) }
        try await Task.sleep(for: .milliseconds(300))
        let asked = ContinuousClock.now
        let during = try await Curl.request("GET", replica.url + "/v1/events?format=json", maxTime: 30)
        #expect(ContinuousClock.now - asked < .seconds(14))
        #expect(during.status == 503, "\(during.body)")
        #expect(during.json?["code"]?.string == "unavailable" && during.body.contains("did not answer within 10 s"), "\(during.body)")
        try await down.value

        try await Self.waitUntil("the replica answers again", timeout: .seconds(30)) {
            try await Curl.request("GET", replica.url + "/v1/events?format=json").status == 200
        }

        // The database goes away for good: SIGTERM still ends the replica, without SIGKILL
        // (`finish` throws if it must kill). Its lease check's statement on the connection the
        // outage cut never returned, and held the shutdown for ever.
        proxy.stop()
        replica.process.terminate()
        let ended: TetherProcess.Result
        do {
            ended = try await replica.process.finish(timeout: .seconds(20))
        } catch {
            Issue.record("the replica's stderr:\n\(replica.process.stderrText.suffix(8000))")
            throw error
        }
        #expect(ended.status == 0, "\(ended.stderr.suffix(4000))")
    }

    /// What a person gets wrong about the database — a URL without a user, nothing listening, a
    /// database that does not exist — stops the start with what failed and what to check (exit
    /// 78, as other configuration errors), and the password never appears.
    @Test func aBadDatabaseStopsTheStartSayingWhatFailedAndNeverThePassword() async throws {
        let (config, cluster) = try Self.unreachableProfileAndCluster()
        let (refusing, holder) = try TestSockets.refusingPort()
        defer { close(holder) }
        let cases: [(db: String, says: String)] = [
            ("postgres://127.0.0.1:\(cluster.port)/tether", "names no user"),
            ("postgres://tether:s3cret-pw@127.0.0.1:\(refusing)/tether", "cannot open the event log in PostgreSQL at postgres://tether@127.0.0.1:\(refusing)/tether"),
            ("postgres://tether:s3cret-pw@127.0.0.1:\(cluster.port)/no_such_db", "database \"no_such_db\" does not exist"),
        ]
        for (db, says) in cases {
            let result = try await TetherProcess.run(["--config", config.path, "serve", "--listen", "127.0.0.1:0", "--db", db])
            #expect(result.status == 78, "\(db): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(db): \(result.stderr)")
            #expect(!(result.stdout + result.stderr).contains("s3cret-pw"), "the password was printed: \(result.stderr)")
            #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")
        }
    }
}
