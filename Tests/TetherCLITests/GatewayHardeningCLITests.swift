import Foundation
import Logging
import Testing
import TetherCore
import TetherSim
#if canImport(Glibc)
import Glibc
#endif
@testable import TetherTestSupport

/// `tether serve` tried as an attacker would, on loopback: idle and half-sent connections,
/// descriptor exhaustion, the log's file modes, ids that are dot segments, token guessing, login
/// lifetimes, cross-site requests without tokens, names that look like loopback, Host headers.
extension GatewayCLITests {
    /// One raw HTTP/1.1 exchange on a socket: what curl would normalise (dot segments, Host) is
    /// sent as written. Returns the status and the whole reply.
    static func raw(_ request: String, port: Int) async throws -> (status: Int, text: String) {
        try await offPool {
            let fd = try TestSockets.connect(port: port, timeoutSeconds: 15)
            defer { close(fd) }
            try TestSockets.sendAll(fd, Array(request.utf8))
            let text = String(decoding: TestSockets.readAll(fd).bytes, as: UTF8.self)
            let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
            return (status, text)
        }
    }

    static func port(_ url: String) -> Int { URL(string: url)?.port ?? 0 }

    /// CPU seconds (user + system) the process used so far, from /proc.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3; utime and stime are fields 14 and 15.
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// More idle connections than the descriptor limit allows: the gateway holds what its budget
    /// allows, says so once, closes idle and half-sent connections after `idle_timeout`, does
    /// not spin, answers health, and its subscription keeps working.
    @Test func idleConnectionsCloseAndTheSubscriptionsKeepTheirDescriptors() async throws {
        try await withGateway(serveTable: "[serve]\nidle_timeout = 2") { gateway in
            try await gateway.start(shell: "ulimit -n 200")
            let port = Self.port(gateway.url)
            let pid = try #require(gateway.process?.pid)
            // 200 descriptors less the reserve leaves 56 client connections; 240 is far beyond.
            var idle: [Int32] = []
            defer { for fd in idle { close(fd) } }
            for _ in 0..<240 { idle.append(try TestSockets.connect(port: port, timeoutSeconds: 20)) }
            let halfSent = try TestSockets.connect(port: port, timeoutSeconds: 20)
            defer { close(halfSent) }
            try TestSockets.sendAll(halfSent, Array("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8))

            let cpuBefore = Self.cpuSeconds(pid)
            let wallBefore = ContinuousClock.now
            let health = try await gateway.get("/v1/health", maxTime: 30)
            #expect(health.status == 200, "\(health.status) \(gateway.process?.stderrText ?? "")")
            let waited = ContinuousClock.now - wallBefore
            let cpu = Self.cpuSeconds(pid) - cpuBefore
            let wall = Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
            #expect(cpu < wall * 0.5, "the gateway used \(cpu) s of CPU in \(wall) s while clients waited")

            // The first connections were accepted and then closed for idleness (an end of
            // stream, not a timeout of our own read); so was the half-sent request.
            let firstIdle = idle[0]
            let first = try await offPool { TestSockets.readAll(firstIdle).end }
            #expect(first == .endOfStream)
            let slow = try await offPool { TestSockets.readAll(halfSent).end }
            #expect(slow == .endOfStream)

            let stderr = gateway.process?.stderrText ?? ""
            #expect(stderr.contains("the most allowed"), "\(stderr.suffix(2000))")
            for fd in idle { close(fd) }
            idle = []

            // The subscription still has its descriptors: a turn is logged whole.
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged { $0["type"] == "turn.completed" && $0["session"]?.string == session }
            let profiles = try await gateway.get("/v1/profiles")
            #expect(profiles.json?.array?.first?["connection"]?["state"] == "connected", "\(profiles.body)")
        }
    }

    /// The log holds prompts and transcripts: its directory is 0700 and its files 0600 however
    /// permissive the shell's umask.
    @Test func theLogIsReadableByItsOwnerOnly() async throws {
        try await withGateway { gateway in
            let directory = (gateway.database as NSString).deletingLastPathComponent + "/state/nested"
            let database = directory + "/gateway.sqlite"
            try await gateway.start(["--db", database], shell: "umask 022")
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged(Self.isType("turn.completed"))
            func mode(_ path: String) throws -> Int {
                try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
            }
            #expect(try mode(directory) == 0o700)
            #expect(try mode((directory as NSString).deletingLastPathComponent) == 0o700)
            for file in [database, database + "-wal", database + "-shm"] {
                #expect(try mode(file) == 0o600, "\(file)")
            }
        }
    }

    /// An id is one path segment: `.` and `..`, whole or in a composite id, are refused before
    /// any backend is called, and nothing reaches another route of the backend.
    @Test func idsThatAreDotSegmentsAreRefused() async throws {
        try await withGatewayOverAWorker { gateway, worker in
            let port = Self.port(gateway.url)
            worker.clearRequestLog()
            for path in ["/v1/profiles/w/sessions/../turns", "/v1/profiles/w/sessions/%2e%2e/turns",
                         "/v1/profiles/w/approvals/..~a", "/v1/profiles/w/approvals/%2E%2E~a", "/v1/profiles/w/sessions/./abort"] {
                let body = "{\"text\":\"hi\",\"decision\":\"accept\"}"
                let reply = try await Self.raw("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                                   + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)", port: port)
                #expect(reply.status == 400 && reply.text.contains("\"bad_request\""), "\(path): \(reply.text)")
            }
            // The gateway's own ingest may list threads meanwhile; none of these POSTs may pass.
            #expect(worker.requestLog.allSatisfy { $0.method == "GET" && !$0.path.contains("..") },
                    "\(worker.requestLog.map { "\($0.method) \($0.path)" })")

            // The CLI, as a user or a script would call it: usage errors, exit 64, no request.
            for arguments in [["approve", "..~x"], ["abort", ".."], ["history", "."], ["send", "..", "hi"]] {
                let result = try await TetherProcess.run(["--config", gateway.config.path, "-p", "w"] + arguments, environment: gateway.environment)
                #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
            }
            #expect(worker.requestLog.allSatisfy { !$0.path.contains("..") && $0.path != "/v1/turns" },
                    "\(worker.requestLog.map { "\($0.method) \($0.path)" })")
        }
    }

    /// An amendment belongs to `accept_with_amendment`: with `accept` it was dropped silently and
    /// the original command accepted.
    @Test func anAmendmentWithAnotherDecisionIsRefused() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let (_, id) = try await gateway.requestApproval(Self.approvalPrompt)
            let refused = try await gateway.post("/v1/profiles/oc/approvals/\(id)", json: "{\"decision\":\"accept\",\"amendment\":[\"echo\",\"safe\"]}")
            #expect(refused.status == 400 && refused.json?["code"] == "bad_request", "\(refused.body)")
            let pending = try await gateway.get("/v1/approvals?profile=oc")
            #expect(pending.json?.array?.compactMap { $0["data"]?["id"]?.string } == [id])
            #expect(try await gateway.post("/v1/profiles/oc/approvals/\(id)", json: "{\"decision\":\"decline\"}").status == 200)
        }
    }

    /// Wrong tokens are logged (never the token) and, past a few, the client waits; a short
    /// token is warned about at start.
    @Test func guessingTokensIsLoggedAndSlowedDown() async throws {
        try await withGateway(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": "abc"]) { gateway in
            try await gateway.start()
            var statuses: [Int] = []
            for attempt in 0..<7 {
                let reply = try await gateway.get("/v1/profiles", headers: ["Authorization: Bearer guess-\(attempt)"])
                statuses.append(reply.status)
                if reply.status == 429 {
                    #expect(Int(reply.headers["retry-after"] ?? "") ?? 0 >= 1, "\(reply.headers)")
                    #expect(reply.json?["code"] == "too_many_requests")
                }
            }
            #expect(statuses.prefix(6).allSatisfy { $0 == 401 } && statuses.last == 429, "\(statuses)")
            // Locked out, even the right token waits; the login route counts the same way.
            #expect(try await gateway.get("/v1/profiles", headers: ["Authorization: Bearer abc"]).status == 429)
            #expect(try await gateway.post("/v1/login", json: "{\"token\":\"abc\"}").status == 429)
            try await Task.sleep(for: .milliseconds(1300))
            #expect(try await gateway.get("/v1/profiles", headers: ["Authorization: Bearer abc"]).status == 200)
            #expect(try await gateway.get("/v1/profiles", headers: ["Authorization: Bearer guess-again"]).status == 401)

            let result = try #require(try await gateway.stop())
            #expect(result.stderr.contains("shorter than 16 bytes"), "\(result.stderr)")
            #expect(result.stderr.contains("refused a wrong token") && result.stderr.contains("127.0.0.1"), "\(result.stderr)")
            #expect(!result.stderr.contains("guess-"), "a refused token was logged")
        }
    }

    /// Login cookies: logout closes the streams opened with the cookie at once; an unused cookie
    /// expires; past `max_logins` the oldest login ends.
    @Test func loginCookiesExpireAndTheirStreamsEndWithThem() async throws {
        let table = "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]\nlogin_idle_days = 0.00004\nmax_logins = 2"  // idle 3.5 s
        let token = "gw-test-token-9d41c7a2"
        try await withGateway(serveTable: table, environment: ["GW_TOKEN": token]) { gateway in
            try await gateway.start()
            func login() async throws -> String {
                let reply = try await gateway.post("/v1/login", json: "{\"token\":\"\(token)\"}")
                return String(try #require(reply.headers["set-cookie"]).split(separator: ";")[0])
            }
            let first = try await login()
            let stream = try Curl.start("GET", gateway.url + "/v1/events", headers: ["Cookie: \(first)"], maxTime: 30)
            try await Task.sleep(for: .milliseconds(500))
            let loggedOut = ContinuousClock.now
            #expect(try await gateway.post("/v1/logout", json: "{}", headers: ["Cookie: \(first)"]).status == 200)
            let ended = try await stream.finish()
            #expect(ContinuousClock.now - loggedOut < .seconds(5), "the stream outlived its logout")
            #expect(ended.status == 200)

            let second = try await login()
            let third = try await login()
            let fourth = try await login()
            #expect(try await gateway.get("/v1/profiles", headers: ["Cookie: \(second)"]).status == 401)
            #expect(try await gateway.get("/v1/profiles", headers: ["Cookie: \(third)"]).status == 200)
            #expect(try await gateway.get("/v1/profiles", headers: ["Cookie: \(fourth)"]).status == 200)
            try await Task.sleep(for: .seconds(4))
            #expect(try await gateway.get("/v1/profiles", headers: ["Cookie: \(fourth)"]).status == 401)
        }
    }

    /// Without tokens, a request another site started carries no `Origin` when it is a GET (an
    /// `<img>`), but the browser says where it came from; and no GET changes a backend.
    @Test func anOpenGatewayRefusesOtherSitesFetchesAndGETsChangeNothing() async throws {
        try await withGatewayOverAWorker { gateway, worker in
            for site in ["cross-site", "same-site"] {
                let reply = try await gateway.get("/v1/profiles", headers: ["Sec-Fetch-Site: \(site)"])
                #expect(reply.status == 403 && reply.json?["code"] == "forbidden", "\(site): \(reply.body)")
            }
            #expect(try await gateway.get("/v1/profiles", headers: ["Sec-Fetch-Site: same-origin"]).status == 200)
            #expect(try await gateway.get("/v1/profiles", headers: ["Sec-Fetch-Site: none"]).status == 200)

            let created = try await gateway.createSession()
            worker.clearRequestLog()
            #expect(try await gateway.get("/v1/profiles/w/sessions/\(created)").status == 200)
            #expect(try await gateway.get("/v1/profiles/w/sessions/019a0000-0000-7000-8000-00000000beef").status == 404)
            #expect(try await gateway.get("/v1/profiles/w/sessions/\(created)/history").status == 200)
            #expect(try await gateway.get("/v1/approvals").status == 200)
            let changed = worker.requestLog.filter { $0.method != "GET" }
            #expect(changed.isEmpty, "\(changed.map { "\($0.method) \($0.path)" })")
        }
    }

    /// A name that starts like a loopback address is a name: without a token it is refused.
    @Test func aNameThatLooksLikeLoopbackIsNotLoopback() async throws {
        try await withGateway { gateway in
            let result = try await TetherProcess.run(["--config", gateway.config.path, "serve", "--listen", "127.attacker.example:0",
                                                      "--db", gateway.database], environment: gateway.environment)
            #expect(result.status == 78)
            #expect(result.stderr.contains("without a token"), "\(result.stderr)")
        }
    }

    /// The smaller rules: one Host header, `nosniff` on every response, JSON-only login, and a
    /// secret in a profile URL's query never shown.
    @Test func hostHeadersNosniffJSONLoginAndURLSecrets() async throws {
        let refusing = try TestSockets.refusingPort()
        defer { close(refusing.holder) }
        let other = "[profiles.q]\nbackend = \"opencode\"\nurl = \"http://127.0.0.1:\(refusing.port)/?access_token=sekrit-in-query\""
        try await withGateway(serveTable: other) { gateway in
            try await gateway.start()
            let port = Self.port(gateway.url)
            let missing = try await Self.raw("GET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n", port: port)
            #expect(missing.status == 400, "\(missing.text)")
            let twice = try await Self.raw("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", port: port)
            #expect(twice.status == 400, "\(twice.text)")

            for path in ["/v1/profiles", "/v1/health", "/v1/no-such-route"] {
                let reply = try await gateway.get(path)
                #expect(reply.headers["x-content-type-options"] == "nosniff", "\(path)")
            }
            let form = try await Curl.request("POST", gateway.url + "/v1/login", headers: ["Content-Type: text/plain"], body: "{\"token\":\"x\"}")
            #expect(form.status == 415, "\(form.status) \(form.body)")

            try await Task.sleep(for: .seconds(2))
            let profiles = try await gateway.get("/v1/profiles")
            #expect(profiles.json?.array?.count == 2 && !profiles.body.contains("sekrit"), "\(profiles.body)")
            let result = try #require(try await gateway.stop())
            #expect(!result.stderr.contains("sekrit") && !result.stdout.contains("sekrit"), "\(result.stderr)")
        }
    }
}
