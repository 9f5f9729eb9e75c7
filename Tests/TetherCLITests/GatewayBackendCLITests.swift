import Foundation
import Testing
import TetherCore
import TetherSim
#if canImport(Glibc)
import Glibc
#endif
@testable import TetherTestSupport
import TetherStreaming

/// `backend = "gateway"`: the real binary as a laptop runs it against a `tether serve` (itself
/// over the OpenCode simulator) — every command through the gateway's API, events resumed by
/// its seq, approvals answered from a fresh process.
@Suite(.serialized) struct GatewayBackendCLITests {
    static let plainPrompt = GatewayCLITests.plainPrompt
    static let approvalPrompt = GatewayCLITests.approvalPrompt

    /// A started gateway over OpenCode (its profile `oc`), and a client config with `hub` (the
    /// gateway's `oc`) and `all` (every profile of the gateway), reached through `url`.
    func withHub(serveTable: String = "", environment: [String: String] = [:], clientKeys: String = "",
                 url: ((GatewayFixture) throws -> String)? = nil,
                 _ body: (GatewayFixture, _ client: [String]) async throws -> Void) async throws {
        let gateway = try await GatewayFixture(serveTable: serveTable, environment: environment)
        do {
            try await gateway.start()
            let address = try url?(gateway) ?? gateway.url
            let client = try TemporaryConfig("""
                [profiles.hub]
                backend = "gateway"
                url = "\(address)"
                remote_profile = "oc"
                reconnect_delay = 0.2
                \(clientKeys)

                [profiles.all]
                backend = "gateway"
                url = "\(address)"
                \(clientKeys)
                """)
            try await body(gateway, ["--config", client.path])
        } catch {
            await gateway.shutdown()
            throw error
        }
        await gateway.shutdown()
    }

    func run(_ arguments: [String], _ client: [String], environment: [String: String] = [:]) async throws -> TetherProcess.Result {
        try await TetherProcess.run(arguments + client, environment: environment, timeout: .seconds(60))
    }

    @Test func sessionsSendAndHistoryGoThroughTheGateway() async throws {
        try await withHub { gateway, client in
            let session = try await TetherProcess.createSession(client + ["-p", "hub"], title: "through the hub")
            // The gateway's own profile has it, under the same id.
            let listed = try await gateway.get("/v1/profiles/oc/sessions")
            #expect(listed.json?.array?.contains { $0["id"]?.string == session } == true, "\(listed.body)")

            let sent = try await run(["send", session, Self.plainPrompt, "--follow", "-p", "hub"], client)
            #expect(sent.status == 0, "\(sent.stderr)")
            let events = try sent.events()
            #expect(events.last?.type == .turnCompleted && events.last?.data["status"] == "completed", "\(sent.stdout)")
            // Where each event came from, and the gateway's seq as its cursor.
            let turnEvents = events.filter { $0.type != .connectionState }
            #expect(turnEvents.allSatisfy { $0.profile == "hub/oc" && $0.backend == .openCode }, "\(sent.stdout)")
            let seqs = turnEvents.compactMap { $0.cursor.flatMap { Int64($0) } }
            #expect(seqs.count == turnEvents.count && seqs == seqs.sorted() && Set(seqs).count == seqs.count)
            let reply = events.filter { $0.type == .partCompleted && $0.data["role"] != "user" }.compactMap { $0.data["text"]?.string }
            #expect(!reply.isEmpty)

            // `all` names the same session PROFILE~ID; its history is the gateway's, ids made local.
            let all = try await run(["sessions", "list", "-p", "all"], client)
            #expect(all.status == 0, "\(all.stderr)")
            #expect(try all.events().contains { $0.session == "oc~\(session)" }, "\(all.stdout)")
            let history = try await run(["history", "oc~\(session)", "-p", "all"], client)
            #expect(history.status == 0, "\(history.stderr)")
            let completed = try history.events().filter { $0.type == .turnCompleted }
            #expect(completed.count == 1 && completed.allSatisfy { $0.session == "oc~\(session)" }, "\(history.stdout)")

            // An id of `all` that names no profile is a usage error that says the form.
            let bare = try await run(["history", session, "-p", "all"], client)
            #expect(bare.status == 64 && bare.stderr.contains("PROFILE~ID"), "\(bare.status) \(bare.stderr)")
            // A missing session is the remote's 404, said as such.
            let missing = try await run(["history", "ses_nope", "-p", "hub"], client)
            #expect(missing.status == 1 && missing.stderr.contains("404"), "\(missing.status) \(missing.stderr)")
        }
    }

    /// An approval listed through `all` carries its profile; a fresh process answers it by that
    /// id alone, once; the same answer again is fine, another one a conflict.
    @Test func anApprovalIsAnsweredFromAFreshProcessByItsIdAlone() async throws {
        try await withHub { gateway, client in
            let (_, approval) = try await gateway.requestApproval(Self.approvalPrompt)
            let listed = try await run(["approvals", "-p", "all"], client)
            #expect(listed.status == 0, "\(listed.stderr)")
            let local = "oc~\(approval)"
            #expect(approval.contains("~"), "OpenCode's approval ids are SESSION~PERMISSION: \(approval)")
            #expect(try listed.events().contains { $0.type == .approvalRequested && $0.data["id"]?.string == local }, "\(listed.stdout)")

            let approved = try await run(["approve", local, "--decision", "accept", "-p", "all"], client)
            #expect(approved.status == 0, "\(approved.stderr)")
            #expect(try approved.events().contains { $0.type == .approvalResolved && $0.data["id"]?.string == local }, "\(approved.stdout)")
            _ = try await gateway.waitForLogged { $0["type"] == "turn.completed" }
            let resolved = try await gateway.logged(type: "approval.resolved")
            #expect(resolved.count == 1 && resolved.first?["data"]?["decision"] == "accept", "\(resolved)")

            let again = try await run(["approve", approval, "--decision", "accept", "-p", "hub"], client)
            #expect(again.status == 0, "\(again.stderr)")
            let other = try await run(["approve", approval, "--decision", "decline", "-p", "hub"], client)
            #expect(other.status == 1 && other.stderr.contains("409"), "\(other.status) \(other.stderr)")
        }
    }

    /// `events --follow` through a link that drops twice mid-turn: the client resumes with
    /// `Last-Event-ID`, and what it printed is the gateway's log, every event once and in order.
    @Test func aDroppedLinkLosesAndRepeatsNothing() async throws {
        var proxy: FaultProxy?
        defer { proxy?.stop() }
        try await withHub(url: { gateway in
            let port = try #require(URL(string: gateway.url)?.port)
            let made = try FaultProxy(upstreamPort: port, framing: .sse) { bytes in
                String(decoding: bytes.prefix(32), as: UTF8.self).hasPrefix("GET /v1/events?")
                    || String(decoding: bytes.prefix(32), as: UTF8.self).hasPrefix("GET /v1/events ")
            }
            proxy = made
            return "http://127.0.0.1:\(made.port)"
        }) { gateway, client in
            let session = try await gateway.createSession()
            let start = try await gateway.lastSeq()
            let follow = try TetherProcess(["events", "--follow", "--since", String(start), "-p", "hub"] + client)
            defer { follow.terminate() }
            _ = try await follow.waitForEvent(.connectionState)
            try await gateway.startTurn(session, Self.plainPrompt)
            _ = try await gateway.waitForLogged { $0["type"] == "part.delta" && $0["session"]?.string == session }
            try await proxy?.restart(downFor: .milliseconds(300))
            try await gateway.startTurn(session, Self.plainPrompt)
            try await proxy?.restart(downFor: .milliseconds(300))
            _ = try await waitForTurns(2, in: session, gateway)
            let expected = try await gateway.logged(since: start).filter { $0["type"] != "connection.state" }.compactMap { $0["seq"]?.int }
            let printed = try await follow.waitForEvents() { events in
                events.compactMap { $0.cursor.flatMap { Int64($0) } }.last == expected.last
            }
            #expect((proxy?.stats.restarts ?? 0) == 2)
            let seqs = printed.filter { $0.type != .connectionState }.compactMap { $0.cursor.flatMap { Int64($0) } }
            #expect(seqs == expected, "printed \(seqs.count), logged \(expected.count)")
            #expect(printed.filter { $0.type == .connectionState && $0.data["state"] == "reconnecting" }.count >= 2)
        }
    }

    /// A `remote_profile` the gateway does not serve is the profile's mistake (exit 78), said
    /// with the names it does serve; a gateway that is down is `unavailable` (exit 69).
    @Test func aRemoteProfileThatIsNotServedOrAGatewayThatIsDownIsSaidSo() async throws {
        try await withHub { gateway, _ in
            let config = try TemporaryConfig("""
                [profiles.typo]
                backend = "gateway"
                url = "\(gateway.url)"
                remote_profile = "ocx"

                [profiles.down]
                backend = "gateway"
                url = "http://127.0.0.1:9"
                """)
            let checked = try await run(["check", "-p", "typo"], ["--config", config.path])
            #expect(checked.status == 78 && checked.stderr.contains("remote_profile to one of: oc"), "\(checked.status) \(checked.stderr)")
            let listed = try await run(["sessions", "list", "-p", "typo"], ["--config", config.path])
            #expect(listed.status == 78 && listed.stderr.contains("profiles.typo.remote_profile"), "\(listed.status) \(listed.stderr)")
            let down = try await run(["sessions", "list", "-p", "down"], ["--config", config.path])
            #expect(down.status == 69 && down.stderr.contains("cannot connect to the gateway (profile down)"), "\(down.status) \(down.stderr)")
        }
    }

    /// Without `--follow`, `events --since SEQ` prints the log after SEQ and ends.
    @Test func eventsSinceASeqPrintsTheRestOfTheLog() async throws {
        try await withHub { gateway, client in
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.plainPrompt)
            let logged = try await waitForTurns(1, in: session, gateway)
            let seqs = logged.compactMap { $0["seq"]?.int }
            let middle = seqs[seqs.count / 2]
            let rest = try await run(["events", "--since", String(middle), "-p", "hub"], client)
            #expect(rest.status == 0, "\(rest.stderr)")
            let after = try await gateway.logged(since: middle).compactMap { $0["seq"]?.int }
            #expect(try rest.events().compactMap { $0.cursor.flatMap { Int64($0) } } == after)
            let bad = try await run(["events", "--since", "ses_1:4", "-p", "hub"], client)
            #expect(bad.status == 64 && bad.stderr.contains("seq"), "\(bad.status) \(bad.stderr)")
        }
    }

    /// A gateway with a token: a profile without one is told what to set (exit 77), the token
    /// itself is never printed, and with it every command works.
    @Test func aTokenIsSentAndAMissingOneIsExplained() async throws {
        let token = "hub-token-\(UInt32.random(in: 1...UInt32.max))"
        try await withHub(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": token]) { gateway, client in
            let refused = try await run(["sessions", "list", "-p", "hub"], client)
            #expect(refused.status == 77 && refused.stderr.contains("profiles.hub.token"), "\(refused.status) \(refused.stderr)")
        }
        try await withHub(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": token],
                          clientKeys: "token = { env = \"HUB_TOKEN\" }") { _, client in
            let listed = try await run(["sessions", "list", "-p", "hub"], client, environment: ["HUB_TOKEN": token])
            #expect(listed.status == 0, "\(listed.stderr)")
            let wrong = try await run(["check", "-p", "hub"], client, environment: ["HUB_TOKEN": "not-it"])
            #expect(wrong.status == 77 && !wrong.stderr.contains(token) && !wrong.stdout.contains(token), "\(wrong.status) \(wrong.stderr)")
            let checked = try await run(["check", "-p", "hub"], client, environment: ["HUB_TOKEN": token])
            #expect(checked.status == 0 && checked.stdout.contains("\"oc\""), "\(checked.stdout) \(checked.stderr)")
        }
    }

    /// A central gateway fanning in a machine's: each remote profile served as `LOCAL/REMOTE`
    /// with its backend, its log fanned in by seq (every event once, across a restart of the
    /// central one), approvals answered centrally reaching the machine once, and a loop refused
    /// at start.
    @Test func aCentralGatewayFansInAMachinesGateway() async throws {
        try await withHub { machine, _ in
            let central = try TemporaryConfig("[profiles.m]\nbackend = \"gateway\"\nurl = \"\(machine.url)\"\nreconnect_delay = 0.2\n")
            let database = (central.path as NSString).deletingLastPathComponent + "/central.sqlite"
            var (process, url) = try await startServe(central, database: database)
            defer { process.terminate() }

            let profiles = try await Curl.request("GET", url + "/v1/profiles").json?.array ?? []
            #expect(profiles.map { $0["name"]?.string } == ["m/oc"] && profiles.first?["backend"] == "opencode", "\(profiles)")
            let machineID = try await machine.get("/v1/health").json?["gateway"]?.string
            let health = try await Curl.request("GET", url + "/v1/health").json
            #expect(machineID != nil && health?["upstream"]?.array == [.string(machineID!)] && health?["gateway"] != nil, "\(String(describing: health))")
            // The remote profile's models, listed through the central gateway as the machine lists them.
            let models = try await Curl.request("GET", url + "/v1/profiles/m%2Foc/models")
            let machineModels = try await machine.get("/v1/profiles/oc/models").json
            #expect(models.status == 200 && models.json == machineModels && machineModels?.array?.isEmpty == false, "\(models.status) \(models.body)")

            // A turn on the machine is in the central log, once, as the machine logged it.
            let session = try await machine.createSession()
            try await machine.startTurn(session, Self.plainPrompt)
            _ = try await waitForTurns(1, in: session, machine)
            try await waitUntil { try await GatewayFixture.logged(at: url, type: "turn.completed").count == 1 }
            let fannedIn = try await GatewayFixture.logged(at: url).filter { $0["profile"] == "m/oc" && $0["cursor"] != nil }
            #expect(fannedIn.allSatisfy { $0["backend"] == "opencode" })
            let machineSeqs = try await machine.logged().compactMap { $0["seq"]?.int }
            #expect(fannedIn.compactMap { $0["cursor"]?.string.flatMap { Int64($0) } } == machineSeqs)

            // An approval answered on the central gateway reaches the machine once.
            let (_, approval) = try await machine.requestApproval(Self.approvalPrompt)
            try await waitUntil {
                let pending = try await Curl.request("GET", url + "/v1/approvals").json?.array ?? []
                return pending.contains { $0["data"]?["id"]?.string == approval && $0["profile"] == "m/oc" }
            }
            let path = "/v1/profiles/m%2Foc/approvals/" + (approval.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? approval)
            let answered = try await Curl.request("POST", url + path, json: "{\"decision\":\"accept\"}")
            #expect(answered.status == 200, "\(answered.status) \(answered.body)")
            _ = try await machine.waitForLogged { $0["type"] == "turn.completed" && $0["session"]?.string != session }
            #expect(try await machine.logged(type: "approval.resolved").count == 1)

            // The central gateway restarts: it resumes after the last seq it logged, nothing twice.
            process.terminate()
            _ = try await process.finish()
            (process, url) = try await startServe(central, database: database)
            try await machine.startTurn(session, Self.plainPrompt)
            _ = try await waitForTurns(2, in: session, machine)
            let last = try await machine.lastSeq()
            try await waitUntil {
                try await GatewayFixture.logged(at: url).compactMap { $0["cursor"]?.string.flatMap { Int64($0) } }.last == last
            }
            let cursors = try await GatewayFixture.logged(at: url).filter { $0["profile"] == "m/oc" }.compactMap { $0["cursor"]?.string.flatMap { Int64($0) } }
            let machineSeqsAfterRestart = try await machine.logged().compactMap { $0["seq"]?.int }
            #expect(cursors == machineSeqsAfterRestart)

            // A third gateway fans in the central one; the central one fanning it in too is a loop.
            let third = try TemporaryConfig("[profiles.c]\nbackend = \"gateway\"\nurl = \"\(url)\"\n")
            let (thirdProcess, thirdURL) = try await startServe(third, database: (third.path as NSString).deletingLastPathComponent + "/third.sqlite")
            defer { thirdProcess.terminate() }
            process.terminate()
            _ = try await process.finish()
            let looped = try TemporaryConfig("""
                [profiles.m]
                backend = "gateway"
                url = "\(machine.url)"

                [profiles.t]
                backend = "gateway"
                url = "\(thirdURL)"
                """)
            let refused = try await TetherProcess.run(["--config", looped.path, "serve", "--listen", "127.0.0.1:0", "--db", database])
            #expect(refused.status == 78 && refused.stderr.contains("would subscribe this gateway to itself"), "\(refused.status) \(refused.stderr)")
        }
    }

    /// `tether notifications` through a gateway that serves a notification profile: the list and
    /// read state go to the desktop through it, `watch` follows its log, and what only the desktop
    /// can do is refused with where to run it.
    @Test func notificationsGoThroughTheGateway() async throws {
        let simulator = NotificationSimulator(options: .init())
        let relay = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let served = try TemporaryConfig("""
            [profiles.n]
            backend = "notification"
            url = "\(relay.absoluteString)"
            peer_id = "gateway-watch"
            """)
        let state = ["XDG_STATE_HOME": NSTemporaryDirectory() + "tether-state-\(UUID().uuidString)"]
        let process = try TetherProcess(["--config", served.path, "serve", "--listen", "127.0.0.1:0",
                                         "--db", (served.path as NSString).deletingLastPathComponent + "/g.sqlite"], environment: state)
        defer { process.terminate() }
        let url = try JSONParser.parse(try await process.waitForLine { $0.hasPrefix("{\"listen\"") })["listen"]?.string ?? ""
        let client = try TemporaryConfig("[profiles.nh]\nbackend = \"gateway\"\nurl = \"\(url)\"\nremote_profile = \"n\"\n")
        let global = ["--config", client.path, "-p", "nh"]

        let listed = try await run(["notifications", "list"], global)
        let listedEvents = try listed.events()
        #expect(listed.status == 0 && listedEvents.count == simulator.notifications().count, "\(listed.stdout) \(listed.stderr)")
        let unread = try await run(["notifications", "list", "--unread"], global).events()
        #expect(unread.count == simulator.notifications().filter { !$0.read }.count && !unread.isEmpty)
        let target = try #require(unread.first?.data["id"]?.string)
        #expect(try await run(["notifications", "read", target], global).status == 0)
        #expect(simulator.notification(id: target)?.read == true)
        #expect(try await run(["notifications", "read-all"], global).status == 0)
        #expect(simulator.notifications().allSatisfy { $0.read })
        let delete = try await run(["notifications", "delete", target], global)
        #expect(delete.status == 64 && delete.stderr.contains("on the gateway's machine"), "\(delete.status) \(delete.stderr)")

        let watch = try TetherProcess(["notifications", "watch"] + global)
        defer { watch.terminate() }
        _ = try await watch.waitForEvent(.connectionState)
        var registered = false
        for _ in 0..<200 where !registered {
            registered = simulator.peers().contains { $0.peerID == "gateway-watch" }
            if !registered { try await Task.sleep(for: .milliseconds(50)) }
        }
        try simulator.push(title: "through the hub", body: "b", to: "gateway-watch")
        let seen = try await watch.waitForEvents { $0.contains { $0.type == .notificationReceived && $0.data["title"] == "through the hub" } }
        #expect(seen.filter { $0.type == .notificationReceived }.count == 1, "\(seen.map(\.type))")
    }

    // MARK: Helpers

    /// `tether serve` on `config` and `database`, once it listens: the process and its URL.
    func startServe(_ config: TemporaryConfig, database: String) async throws -> (TetherProcess, String) {
        let process = try TetherProcess(["--config", config.path, "serve", "--listen", "127.0.0.1:0", "--db", database])
        let line = try await process.waitForLine { $0.hasPrefix("{\"listen\"") }
        return (process, try JSONParser.parse(line)["listen"]?.string ?? "")
    }

    func waitUntil(timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw FixtureError("the condition did not hold within \(timeout)")
    }

    /// The gateway's logged events of `session` once it has `count` turn.completed.
    func waitForTurns(_ count: Int, in session: String, _ gateway: GatewayFixture) async throws -> [JSONValue] {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let logged = try await gateway.logged().filter { $0["session"]?.string == session }
            if logged.filter({ $0["type"] == "turn.completed" }).count >= count { return logged }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw FixtureError("\(count) turns of \(session) were not logged in time")
    }
}
