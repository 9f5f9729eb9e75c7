import Foundation
import Logging
import Testing
import TetherCore
import TetherSim
#if canImport(Glibc)
import Glibc
#endif
@testable import TetherTestSupport
import TetherStreaming

/// `tether serve`, the real binary, over the OpenCode simulator: replay, restarts, approvals, auth
/// and retention, through HTTP as a client (a phone's page, a script) sees them.
@Suite(.serialized) struct GatewayCLITests {
    static let plainPrompt = "Say hello in three words"
    static let approvalPrompt = "Clean the build dir and say done"

    func withGateway(pacing: Duration = .milliseconds(5), flood: Int? = nil, floodRate: Int? = nil, serveTable: String = "",
                     environment: [String: String] = [:], _ body: (GatewayFixture) async throws -> Void) async throws {
        let gateway = try await GatewayFixture(pacing: pacing, flood: flood, floodRate: floodRate, serveTable: serveTable,
                                               environment: environment)
        do {
            try await body(gateway)
        } catch {
            await gateway.shutdown()
            throw error
        }
        await gateway.shutdown()
    }

    static func isType(_ type: String) -> (JSONValue) -> Bool { { $0["type"]?.string == type } }

    @Test func resumeWithLastEventIDGetsExactlyTheRest() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged(Self.isType("turn.completed"))

            let end = try await gateway.lastSeq()
            let all = try await gateway.stream("/v1/events?since=0", through: end).sseEvents
            let seqs = all.compactMap(\.id)
            #expect(seqs.count == all.count && seqs.count > 10)
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count)
            let middle = seqs[seqs.count / 2]
            // Last-Event-ID wins over since.
            let rest = try await gateway.stream("/v1/events?since=0", headers: ["Last-Event-ID: \(middle)"], through: end).sseEvents
            #expect(rest.compactMap(\.id) == seqs.filter { $0 > middle })
            #expect(rest.map(\.data) == all.filter { ($0.id ?? 0) > middle }.map(\.data))

            // No cursor: one id-only block with the current end, then live events only.
            let live = try await gateway.get("/v1/events", maxTime: 1)
            #expect(live.headers["content-type"] == "text/event-stream")
            #expect(live.body.hasPrefix("id: \(seqs.last!)\n\n"))
            #expect(live.sseEvents.isEmpty)

            // A live client sees the next turn with nothing skipped at the seam.
            let last = seqs.last!
            let streamed = try Curl.start("GET", gateway.url + "/v1/events", headers: ["Last-Event-ID: \(last)"], maxTime: 90)
            try await Task.sleep(for: .milliseconds(500))
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged { $0["type"] == "turn.completed" && ($0["seq"]?.int ?? 0) > last }
            let logged = try await gateway.logged(since: last).compactMap { $0["seq"]?.int }
            let reply = try await streamed.stop(onceItHas: logged.last ?? 0, timeout: .seconds(30))
            #expect(reply.sseEvents.compactMap(\.id) == logged, "\(reply.status) \(reply.body.prefix(300))")
            #expect(reply.sseEvents.contains { $0.data.contains("\"turn.completed\"") })
        }
    }

    @Test func approvalsAnswerOnceAndSurviveARestart() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let (_, id) = try await gateway.requestApproval(Self.approvalPrompt)
            let pending = try await gateway.get("/v1/approvals?profile=oc")
            #expect(pending.json?.array?.compactMap { $0["data"]?["id"]?.string } == [id])

            let path = "/v1/profiles/oc/approvals/\(id)"
            let first = try await gateway.post(path, json: "{\"decision\":\"accept\"}")
            #expect(first.status == 200, "\(first.body)")
            #expect(first.json?["type"] == "approval.resolved" && first.json?["data"]?["decision"] == "accept")
            let again = try await gateway.post(path, json: "{\"decision\":\"accept\"}")
            #expect(again.status == 200)
            let other = try await gateway.post(path, json: "{\"decision\":\"decline\"}")
            #expect(other.status == 409)
            #expect(other.headers["content-type"] == "application/problem+json")
            #expect(other.json?["code"] == "conflict" && other.json?["decision"] == "accept")
            #expect(other.json?["detail"]?.string?.contains("accept") == true)
            let unknown = try await gateway.post("/v1/profiles/oc/approvals/oc~per_nope", json: "{\"decision\":\"accept\"}")
            #expect(unknown.status == 404 && unknown.json?["code"] == "not_found")

            // Restarted on the same log: the answer is remembered.
            try await gateway.waitForLogged(Self.isType("turn.completed"))
            _ = try await gateway.stop()
            try await gateway.start()
            #expect(try await gateway.post(path, json: "{\"decision\":\"decline\"}").status == 409)
            #expect(try await gateway.post(path, json: "{\"decision\":\"accept\"}").status == 200)

            let request = try #require(id.split(separator: "~").last)
            let replies = await gateway.simulator.requests().filter { $0.method == "POST" && $0.path.contains(request) }
            #expect(replies.count == 1)
            #expect(try await gateway.logged(type: "approval.").count == 2)
        }
    }

    @Test func aKilledGatewayRestartsOnItsLogWithNoDuplicatesAndOldCursorsWork() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.approvalPrompt)
            let requested = try await gateway.waitForLogged(Self.isType("approval.requested"))
            let id = try #require(requested["data"]?["id"]?.string)
            let before = try await gateway.logged()
            let cursor = try #require(before.last?["seq"]?.int)

            await gateway.kill()  // mid-turn: the approval is pending
            try await gateway.start()
            // The resubscription re-reads the pending approval; it is not logged twice.
            try await Task.sleep(for: .seconds(1))
            #expect(try await gateway.post("/v1/profiles/oc/approvals/\(id)", json: "{\"decision\":\"accept\"}").status == 200)
            try await gateway.waitForLogged(Self.isType("turn.completed"))
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged { $0["type"] == "turn.completed" && $0["seq"]?.int ?? 0 > cursor + 5 && $0["turn"] != requested["turn"] }

            let events = try await gateway.logged()
            let seqs = events.compactMap { $0["seq"]?.int }
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count)
            #expect(seqs.filter { $0 <= cursor } == before.compactMap { $0["seq"]?.int })
            for type in ["part.completed", "turn.completed", "approval.requested", "approval.resolved", "session.created"] {
                let keys = events.filter { $0["type"]?.string == type }.map { event in
                    [event["session"]?.string, event["turn"]?.string, event["part"]?.string, event["data"]?["id"]?.string]
                        .map { $0 ?? "" }.joined(separator: "|")
                }
                #expect(Set(keys).count == keys.count, "\(type) logged twice: \(keys)")
            }
            #expect(events.filter { $0["type"] == "turn.completed" }.count == 2)
            #expect(events.filter { $0["type"]?.string?.hasPrefix("approval.") == true }.count == 2)

            // The cursor from before the crash resumes exactly after it.
            let resumed = try await gateway.stream("/v1/events", headers: ["Last-Event-ID: \(cursor)"], through: seqs.last ?? 0).sseEvents
            #expect(resumed.compactMap(\.id) == seqs.filter { $0 > cursor })
        }
    }

    /// A turn that ran from start to end while the gateway was down: no stream can replay it, so
    /// the restarted gateway reads it back from history — each part.completed and the
    /// turn.completed once, whole.
    @Test func aTurnThatRanWhileTheGatewayWasDownIsFilledFromHistory() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged(Self.isType("turn.completed"))
            _ = try await gateway.stop()

            let sent = try await TetherProcess.run(["send", session, Self.plainPrompt, "--follow", "--config", gateway.config.path, "-p", "oc"],
                                                   environment: gateway.environment)
            #expect(sent.status == 0, "\(sent.stderr)")
            let missed = try sent.events()
            let turn = try #require(missed.first { $0.type == .turnCompleted }?.turn)
            let parts = Set(missed.filter { $0.type == .partCompleted }.compactMap(\.part))

            try await gateway.start()
            try await gateway.waitForLogged { $0["type"] == "turn.completed" && $0["turn"]?.string == turn }
            try await Task.sleep(for: .milliseconds(500))
            let logged = try await gateway.logged().filter { $0["turn"]?.string == turn }
            let loggedParts = logged.filter { $0["type"] == "part.completed" }.compactMap { $0["part"]?.string }
            #expect(Set(loggedParts) == parts && loggedParts.count == parts.count)
            #expect(logged.filter { $0["type"] == "turn.completed" }.count == 1)
            let text = missed.last { $0.type == .partCompleted && $0.data["kind"] == "text" }?.data["text"]?.string
            #expect(logged.contains { $0["type"] == "part.completed" && $0["data"]?["text"]?.string == text })
        }
    }

    /// `notify`: one text/plain POST with a Title header per approval; the sink is down at first,
    /// then refuses once (503), then takes it; not pushed again after a restart.
    @Test func anApprovalIsPushedOnceEvenAcrossARestart() async throws {
        let port = try TestSockets.freePort()
        // An ntfy topic is a secret (whoever knows it reads the pushes): never in the logs.
        let table = "[serve]\nnotify = { url = \"http://127.0.0.1:\(port)/topic-s3cret\" }\npublic_url = \"https://gw.example/\""
        try await withGateway(serveTable: table) { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.approvalPrompt)
            try await gateway.waitForLogged(Self.isType("approval.requested"))
            try await Task.sleep(for: .milliseconds(300))  // the first try finds nothing listening
            let receiver = try await PushReceiver(port: port)
            defer { receiver.stop() }
            let deadline = ContinuousClock.now + .seconds(15)
            while receiver.posts.count < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
            #expect(gateway.process?.stderrText.contains("approval push failed; retrying") == true)
            #expect(gateway.process?.stderrText.contains("s3cret") == false, "\(gateway.process?.stderrText ?? "")")
            let posts = receiver.posts
            #expect(posts.count == 2)  // refused once (503), then accepted
            let post = try #require(posts.last)
            #expect(post["type"]?.hasPrefix("text/plain") == true)
            #expect(post["title"]?.contains("Approval") == true)
            #expect(post["body"]?.contains("rm -rf build") == true && post["body"]?.contains("risk: high") == true)
            #expect(post["body"]?.contains("https://gw.example/") == true)

            _ = try await gateway.stop()
            try await gateway.start()
            try await Task.sleep(for: .seconds(2))
            #expect(receiver.posts.count == 2)
        }
    }

    /// A push that could not go out (the sink down) for an approval answered meanwhile is not
    /// made after a restart: nobody needs asking any more.
    @Test func anApprovalAnsweredBeforeItsPushWentOutIsNotPushedAfterARestart() async throws {
        let port = try TestSockets.freePort()
        try await withGateway(serveTable: "[serve]\nnotify = { url = \"http://127.0.0.1:\(port)/topic\" }") { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.approvalPrompt)
            let requested = try await gateway.waitForLogged(Self.isType("approval.requested"))
            let id = try #require(requested["data"]?["id"]?.string)
            #expect(try await gateway.post("/v1/profiles/oc/approvals/\(id)", json: "{\"decision\":\"accept\"}").status == 200)
            try await gateway.waitForLogged(Self.isType("turn.completed"))
            _ = try await gateway.stop()
            let receiver = try await PushReceiver(port: port)
            defer { receiver.stop() }
            try await gateway.start()
            try await Task.sleep(for: .seconds(2))
            #expect(receiver.posts.isEmpty, "\(receiver.posts)")
        }
    }

    /// `notify = { command = [...] }`: run once per approval with the title and body appended.
    @Test func anApprovalRunsTheNotifyCommandOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-notify-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = directory + "/notify.sh"
        try "#!/bin/sh\nprintf '%s\\n--\\n%s\\n==\\n' \"$1\" \"$2\" >> \(directory)/calls\n".write(toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        try await withGateway(serveTable: "[serve]\nnotify = { command = [\"\(script)\"] }") { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.approvalPrompt)
            try await gateway.waitForLogged(Self.isType("approval.requested"))
            var calls = ""
            let deadline = ContinuousClock.now + .seconds(10)
            while !calls.contains("=="), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                calls = (try? String(contentsOfFile: directory + "/calls", encoding: .utf8)) ?? ""
            }
            #expect(calls.components(separatedBy: "==").count == 2)
            #expect(calls.hasPrefix("Approval needed (oc)\n--\n") && calls.contains("rm -rf build"))
        }
    }

    /// An approval requested while the gateway was down is in the log once it is back, and can be
    /// answered through it.
    @Test func anApprovalRequestedWhileTheGatewayWasDownIsLoggedAndAnswerable() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            _ = try await gateway.stop()
            let sent = try await TetherProcess.run(["send", session, Self.approvalPrompt, "--config", gateway.config.path, "-p", "oc"],
                                                   environment: gateway.environment)
            #expect(sent.status == 0, "\(sent.stderr)")
            let permission = try await gateway.simulator.waitForPendingPermission()
            try await gateway.start()
            let requested = try await gateway.waitForLogged(Self.isType("approval.requested"))
            let id = try #require(requested["data"]?["id"]?.string)
            #expect(id.hasSuffix(permission))
            #expect(try await gateway.post("/v1/profiles/oc/approvals/\(id)", json: "{\"decision\":\"accept\"}").status == 200)
            try await gateway.waitForLogged(Self.isType("turn.completed"))
            #expect(try await gateway.logged(type: "approval.requested").count == 1)
        }
    }

    @Test func tokensCookiesAndTheirRules() async throws {
        let token = "gw-test-token-7f3a9c"
        try await withGateway(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": token]) { gateway in
            try await gateway.start()
            var replies: [HTTPReply] = []
            func check(_ reply: HTTPReply) -> HTTPReply {
                replies.append(reply)
                return reply
            }
            #expect(check(try await gateway.get("/v1/health")).status == 200)
            let refused = check(try await gateway.get("/v1/profiles"))
            #expect(refused.status == 401 && refused.headers["content-type"] == "application/problem+json")
            #expect(refused.json?["code"] == "unauthorized" && refused.json?["status"] == 401)
            #expect(check(try await gateway.get("/v1/openapi.json")).status == 401)
            #expect(check(try await gateway.get("/v1/profiles", headers: ["Authorization: Bearer wrong"])).status == 401)
            #expect(check(try await gateway.get("/v1/profiles", headers: ["Authorization: Bearer \(token)"])).status == 200)

            #expect(check(try await gateway.post("/v1/login", json: "{\"token\":\"wrong\"}")).status == 401)
            let login = check(try await gateway.post("/v1/login", json: "{\"token\":\"\(token)\"}"))
            #expect(login.status == 200)
            let setCookie = try #require(login.headers["set-cookie"])
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && !setCookie.contains("Secure"))
            let cookie = String(setCookie.split(separator: ";")[0])
            let secure = check(try await gateway.post("/v1/login", json: "{\"token\":\"\(token)\"}", headers: ["X-Forwarded-Proto: https"]))
            #expect(secure.headers["set-cookie"]?.contains("Secure") == true)

            #expect(check(try await gateway.get("/v1/profiles", headers: ["Cookie: \(cookie)"])).status == 200)
            // A proxy's basic auth in front of the page: its Authorization is not ours to judge.
            #expect(check(try await gateway.get("/v1/profiles", headers: ["Cookie: \(cookie)", "Authorization: Basic dXNlcjpwdw=="])).status == 200)
            #expect(check(try await gateway.get("/v1/profiles", headers: ["Authorization: Basic dXNlcjpwdw=="])).status == 401)
            #expect(check(try await gateway.get("/v1/profiles", headers: ["Cookie: \(cookie)", "Authorization: Bearer wrong"])).status == 401)
            let form = check(try await Curl.request("POST", gateway.url + "/v1/profiles/oc/sessions",
                                              headers: ["Cookie: \(cookie)", "Content-Type: application/x-www-form-urlencoded"], body: "title=x"))
            #expect(form.status == 403 && form.json?["code"] == "forbidden")
            let created = check(try await gateway.post("/v1/profiles/oc/sessions", json: "{}", headers: ["Cookie: \(cookie)"]))
            #expect(created.status == 201)

            #expect(check(try await gateway.post("/v1/logout", json: "{}", headers: ["Cookie: \(cookie)"])).status == 200)
            #expect(check(try await gateway.get("/v1/profiles", headers: ["Cookie: \(cookie)"])).status == 401)

            let result = try #require(try await gateway.stop())
            #expect(result.status == 0 || result.status == 130, "\(result.stderr)")
            for reply in replies {
                #expect(!reply.body.contains(token) && !reply.headers.values.contains { $0.contains(token) })
            }
            #expect(!result.stdout.contains(token) && !result.stderr.contains(token))
        }
    }

    /// The page's files are open (a browser must load the login form before it has a cookie),
    /// embedded in the binary, from this origin only; the API behind them still needs auth.
    @Test func thePageIsServedWithoutAuthAndTheAPIStillNeedsIt() async throws {
        try await withGateway(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": "page-test-token"]) { gateway in
            try await gateway.start()
            let page = try await gateway.get("/")
            #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.body.contains("width=device-width") && page.body.contains("type=\"password\""))
            #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
            // Nothing from another host, and only relative URLs (the page is often behind a proxy's prefix).
            #expect(!page.body.contains("http://") && !page.body.contains("https://") && !page.body.contains("src=\"/"))
            for (path, type) in [("/app.js", "text/javascript"), ("/app.css", "text/css"), ("/icon.svg", "image/svg+xml")] {
                let asset = try await gateway.get(path)
                #expect(asset.status == 200 && asset.headers["content-type"]?.hasPrefix(type) == true, "\(path)")
            }
            let script = try await gateway.get("/app.js")
            #expect(script.body.contains("new EventSource(") && !script.body.contains("\"/v1/"))
            #expect(try await gateway.get("/v1/profiles").status == 401)
            #expect(try await gateway.get("/v1/approvals").status == 401)
        }
    }

    /// The page's files and the OpenAPI document live in Sources/TetherGateway/Page and are
    /// embedded at build time: what the binary serves is each committed file, byte for byte.
    @Test func theServedAssetsAreTheCommittedFilesByteForByte() async throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/TetherGateway/Page").standardized
        try await withGateway(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": "page-test-token"]) { gateway in
            try await gateway.start()
            for (path, file, auth) in [("/v1/openapi.json", "openapi.json", true), ("/", "index.html", false),
                                       ("/app.js", "app.js", false), ("/app.css", "app.css", false), ("/icon.svg", "icon.svg", false),
                                       ("/sw.js", "sw.js", false), ("/manifest.webmanifest", "manifest.webmanifest", false)] {
                let committed = try Data(contentsOf: page.appendingPathComponent(file))
                let reply = try await gateway.get(path, headers: auth ? ["Authorization: Bearer page-test-token"] : [])
                #expect(reply.status == 200, "\(path)")
                #expect(Array(reply.body.utf8) == Array(committed), "\(path) is not Page/\(file) byte for byte")
            }
            let document = try await gateway.get("/v1/openapi.json", headers: ["Authorization: Bearer page-test-token"])
            #expect(document.headers["content-type"]?.hasPrefix("application/json") == true)
            #expect(document.json?["openapi"]?.string == "3.1.0")
            // The icons are binary: downloaded to a file and compared as bytes.
            for size in [192, 512] {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("tether-icon-\(UUID().uuidString).png")
                defer { try? FileManager.default.removeItem(at: file) }
                let type = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", file.path, "-w", "%{http_code} %{content_type}", gateway.url + "/icon-\(size).png"])
                #expect(type == "200 image/png", "\(type)")
                #expect(try Data(contentsOf: file) == Data(contentsOf: page.appendingPathComponent("icon-\(size).png")), "icon-\(size).png")
            }
            // The page's CSP lets it load its manifest and register its service worker, nothing else.
            let csp = try await gateway.get("/").headers["content-security-policy"] ?? ""
            #expect(csp.contains("manifest-src 'self'") && csp.contains("worker-src 'self'") && csp.contains("default-src 'none'"))
            // The page offers "Log out" only when there are tokens to log in with.
            #expect(try await gateway.get("/v1/health").json?["auth"] == "token")
        }
    }

    /// `tether pair` beside a running gateway: a one-time link whose code (never the token) is
    /// traded once for a login cookie.
    @Test func aPairingLinkLogsOneBrowserInOnce() async throws {
        let token = "gw-pair-token-0d9e51"
        try await withGateway(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": token]) { gateway in
            try await gateway.start()
            let port = try #require(URL(string: gateway.url)?.port)
            let paired = try await TetherProcess.run(["--config", gateway.config.path, "pair", "--listen", "127.0.0.1:\(port)", "--db", gateway.database],
                                                     environment: gateway.environment.merging(["GW_TOKEN": token]) { $1 })
            #expect(paired.status == 0, "\(paired.stderr)")
            // The URL alone on stdout (data); the QR code and the words on stderr.
            #expect(paired.lines.count == 1, "\(paired.stdout)")
            let link = try #require(paired.lines.first)
            #expect(link.hasPrefix(gateway.url + "/#pair="), "\(link)")
            #expect(paired.stderr.contains("█") && paired.stderr.contains("5 minutes"))
            #expect(!paired.stdout.contains(token) && !paired.stderr.contains(token))
            let code = String(link.split(separator: "=", maxSplits: 1)[1])

            #expect(try await gateway.post("/v1/pair", json: "{\"code\":\"wrong-code-aaaaaaaaaaa\"}").status == 401)
            let first = try await gateway.post("/v1/pair", json: "{\"code\":\"\(code)\"}")
            #expect(first.status == 200, "\(first.body)")
            let setCookie = try #require(first.headers["set-cookie"])
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
            #expect(!first.body.contains(token) && !setCookie.contains(token) && !setCookie.contains(code))
            let cookie = String(setCookie.split(separator: ";")[0])
            #expect(try await gateway.get("/v1/profiles", headers: ["Cookie: \(cookie)"]).status == 200)
            let again = try await gateway.post("/v1/pair", json: "{\"code\":\"\(code)\"}")
            #expect(again.status == 401 && again.json?["code"] == "unauthorized" && again.headers["set-cookie"] == nil, "\(again.body)")
            #expect(again.body.contains("already used or has expired"))
            // Port 0 names no gateway: no link.
            let anyPort = try await TetherProcess.run(["--config", gateway.config.path, "pair", "--listen", "127.0.0.1:0", "--db", gateway.database],
                                                      environment: gateway.environment)
            #expect(anyPort.status == 64 && anyPort.stdout.isEmpty && anyPort.stderr.contains("port"), "\(anyPort.stderr)")
            // A form post (not JSON) cannot pair.
            #expect(try await Curl.request("POST", gateway.url + "/v1/pair", headers: ["Content-Type: application/x-www-form-urlencoded"],
                                           body: "code=\(code)").status == 415)
        }
    }

    /// `tether serve --pair`: stdout stays the one JSON line; the link (with the bound port)
    /// and its QR code go to stderr, and the link works once.
    @Test func servePairPrintsALinkOnStderrThatWorksOnce() async throws {
        try await withGateway(serveTable: "[serve]\ntokens = [{ env = \"GW_TOKEN\" }]", environment: ["GW_TOKEN": "gw-serve-pair-token-1"]) { gateway in
            try await gateway.start(["--pair"])
            let process = try #require(gateway.process)
            let deadline = ContinuousClock.now + .seconds(10)
            while !process.stderrText.contains("#pair="), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let stderr = process.stderrText
            let link = try #require(stderr.split(separator: "\n").first { $0.hasPrefix(gateway.url + "/#pair=") }, "\(stderr)")
            #expect(stderr.contains("█") && !stderr.contains("gw-serve-pair-token-1"))
            #expect(process.stdoutLines.count == 1, "\(process.stdoutLines)")
            let code = String(link.split(separator: "=", maxSplits: 1)[1])
            #expect(try await gateway.post("/v1/pair", json: "{\"code\":\"\(code)\"}").status == 200)
            #expect(try await gateway.post("/v1/pair", json: "{\"code\":\"\(code)\"}").status == 401)
        }
    }

    /// Models: listed where the backend can (OpenCode), 404 `unsupported` where it cannot (the
    /// Codex Worker); a session created with a model runs its turns on it unless a turn names another.
    @Test func aSessionCreatedWithAModelRunsItsTurnsOnIt() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let models = try await gateway.get("/v1/profiles/oc/models")
            #expect(models.status == 200 && models.json?.array?.first?["id"] == "anthropic/claude-sonnet-4", "\(models.body)")
            #expect(models.json?.array?.first?["name"]?.string?.contains("Claude Sonnet 4") == true)
            let created = try await gateway.post("/v1/profiles/oc/sessions", json: "{\"title\":\"m\",\"model\":\"anthropic/claude-opus-9\"}")
            #expect(created.status == 201, "\(created.body)")
            let session = try #require(created.json?["id"]?.string)
            #expect(try await gateway.post("/v1/profiles/oc/sessions/\(session)/turns", json: "{\"text\":\"\(Self.plainPrompt)\"}").status == 202)
            let first = try await gateway.waitForLogged { $0["type"]?.string == "turn.started" && $0["session"]?.string == session }
            #expect(first["data"]?["model"] == "anthropic/claude-opus-9", "\(first)")
            #expect(try await gateway.post("/v1/profiles/oc/sessions/\(session)/turns",
                                           json: "{\"text\":\"\(Self.plainPrompt)\",\"model\":\"anthropic/claude-sonnet-4\"}").status == 202)
            let second = try await gateway.waitForLogged { $0["type"]?.string == "turn.started" && $0["session"]?.string == session && $0["seq"] != first["seq"] }
            #expect(second["data"]?["model"] == "anthropic/claude-sonnet-4", "a turn's own model wins: \(second)")
            #expect(try await gateway.post("/v1/profiles/oc/sessions", json: "{\"model\":\" \"}").status == 400)
        }
        try await withGatewayOverAWorker { gateway, _ in
            let refused = try await gateway.get("/v1/profiles/w/models")
            #expect(refused.status == 404 && refused.json?["code"] == "unsupported", "\(refused.body)")
        }
    }

    /// A question is answered through the API with its answers (the chosen labels, one list per
    /// question), which reach the backend; malformed answers, or answers with another decision, are 400.
    @Test func aQuestionIsAnsweredWithItsAnswers() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let (session, id) = try await gateway.requestApproval("Ask me which directory")
            let path = "/v1/profiles/oc/approvals/\(id)"
            for body in ["{\"decision\":\"accept\",\"answers\":[]}", "{\"decision\":\"accept\",\"answers\":[[]]}",
                         "{\"decision\":\"accept\",\"answers\":[[\"dist\",3]]}", "{\"decision\":\"accept\",\"answers\":\"dist\"}",
                         "{\"decision\":\"decline\",\"answers\":[[\"dist\"]]}"] {
                let refused = try await gateway.post(path, json: body)
                #expect(refused.status == 400, "\(body): \(refused.body)")
            }
            let answered = try await gateway.post(path, json: "{\"decision\":\"accept\",\"answers\":[[\"dist\"]]}")
            #expect(answered.status == 200, "\(answered.body)")
            // The simulator answers with the choice it received.
            let reply = try await gateway.waitForLogged {
                $0["type"] == "part.completed" && $0["session"]?.string == session && $0["data"]?["text"]?.string?.contains("clean dist") == true
            }
            #expect(reply["data"]?["text"]?.string == "Understood: I'll clean dist and leave the rest alone.")
        }
    }

    /// A running `tether serve -p w` over a Codex Worker simulator (profile `w`).
    func withGatewayOverAWorker(_ body: (GatewayFixture, CodexWorkerSimulator) async throws -> Void) async throws {
        let worker = CodexWorkerSimulator(options: .init(token: "t0ken"), logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() })
        let workerURL = try await worker.start()
        defer { Task { await worker.stop() } }
        let table = """
            [profiles.w]
            backend = "codex-worker"
            url = "\(workerURL.absoluteString)"
            token = { env = "WORKER_TEST_TOKEN" }
            """
        try await withGateway(serveTable: table, environment: ["WORKER_TEST_TOKEN": "t0ken"]) { gateway in
            gateway.profile = "w"
            try await gateway.start(["-p", "w"])
            try await body(gateway, worker)
        }
    }

    /// The Codex Worker has no all-sessions stream: a turn started through the gateway is followed
    /// by its job from the first event, and its deltas are logged once although the session's
    /// own follower sees the same job.
    @Test func aCodexWorkerTurnStartedThroughTheGatewayIsLoggedWhole() async throws {
        try await withGatewayOverAWorker { gateway, _ in
            let profiles = try await gateway.get("/v1/profiles").json?.array?.compactMap { $0["name"]?.string }
            #expect(profiles == ["w"])
            let thread = try await gateway.createSession()
            let started = try await gateway.post("/v1/profiles/w/sessions/\(thread)/turns", json: "{\"text\":\"hello there\"}")
            #expect(started.status == 202)
            let job = try #require(started.json?["turn"]?.string)
            let done = try await gateway.waitForLogged { $0["type"] == "turn.completed" && $0["turn"]?.string == job }
            #expect(done["profile"] == "w" && done["backend"] == "codex-worker")
            try await Task.sleep(for: .seconds(1))
            let events = try await gateway.logged().filter { $0["turn"]?.string == job }
            #expect(events.first?["type"] == "turn.started")
            let texts = events.filter { $0["type"] == "part.completed" && $0["data"]?["kind"] == "text" }.compactMap { $0["data"]?["text"]?.string }
            #expect(texts.first == "hello there")
            let deltas = events.filter { $0["type"] == "part.delta" }.compactMap { $0["data"]?["delta"]?.string }
            let assistant = try #require(events.last { $0["type"] == "part.completed" && $0["data"]?["role"] == "assistant" }?["data"]?["text"]?.string)
            #expect(deltas.joined() == assistant)

            // A turn started elsewhere (another tether) reaches the log too, whole. (The worker
            // stamps a thread's updatedAt in whole seconds; the gateway reads back a thread whose
            // stamp moved, so the turn starts in a later second than the last one.)
            try await Task.sleep(for: .milliseconds(1100))
            let elsewhere = try await TetherProcess.run(["send", thread, "second one", "--follow", "--config", gateway.config.path, "-p", "w"],
                                                        environment: gateway.environment)
            #expect(elsewhere.status == 0, "\(elsewhere.stderr)")
            let other = try #require(try elsewhere.events().first { $0.type == .turnCompleted }?.turn)
            try await gateway.waitForLogged(timeout: .seconds(20)) { $0["type"] == "turn.completed" && $0["turn"]?.string == other }
            let otherTexts = try await gateway.logged().filter { $0["turn"]?.string == other && $0["type"] == "part.completed" }
            #expect(otherTexts.contains { $0["data"]?["text"]?.string == "second one" })
        }
    }

    /// A notification profile: its `watch()` feeds the log (a push sent twice is logged once), and
    /// the notification routes reach the desktop.
    @Test func aNotificationProfileIsWatchedAndServed() async throws {
        let relay = NotificationSimulator(options: .init())
        let relayURL = try await relay.start()
        defer { Task { await relay.stop() } }
        let table = """
            [profiles.n]
            backend = "notification"
            url = "\(relayURL.absoluteString)"
            """
        let state = NSTemporaryDirectory() + "tether-state-\(UUID().uuidString)"
        try await withGateway(serveTable: table, environment: ["XDG_STATE_HOME": state]) { gateway in
            try await gateway.start(["-p", "n"])
            for _ in 0..<100 {
                if relay.peers().contains(where: { $0.deviceType != "desktop" && !$0.peerID.contains("~") }) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            try relay.push(title: "Build done", body: "green", notificationID: "n-42", twice: true)
            let logged = try await gateway.waitForLogged(Self.isType("notification.received"))
            #expect(logged["profile"] == "n" && logged["data"]?["id"] == "n-42")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await gateway.logged(type: "notification.").count == 1)

            let unread = try await gateway.get("/v1/profiles/n/notifications?unread=true")
            #expect(unread.status == 200, "\(unread.body)")
            let target = try #require(unread.json?.array?.first?["id"]?.string)
            #expect(try await gateway.post("/v1/profiles/n/notifications/\(target)/read", json: "{}").status == 200)
            #expect(relay.notification(id: target)?.read == true)
            #expect(try await gateway.post("/v1/profiles/n/notifications/read-all", json: "{}").status == 200)
            #expect(relay.notifications().allSatisfy { $0.read })
            let sessions = try await gateway.get("/v1/profiles/n/sessions")
            #expect(sessions.status == 422 && sessions.json?["code"] == "unsupported")
        }
    }

    /// A client that never reads is cut off within 30 s (here the kernel's socket buffers take the
    /// whole flood, so it is the stalled write that gives it away; the 10,000-event backlog limit is
    /// EventStreamTests' case); a client that reads gets every event meanwhile, and the gateway's
    /// memory stays bounded.
    @Test func aClientThatNeverReadsIsCutOffAndSlowsNoOne() async throws {
        let flood = 16_000
        // Paced, so the client that never reads is connected while the events arrive.
        try await withGateway(flood: flood, floodRate: 4_000) { gateway in
            try await gateway.start(["-v"])
            let port = Int(gateway.url.split(separator: ":").last ?? "") ?? 0
            let stuck = try TestSockets.connect(port: port)
            defer { close(stuck) }
            var small: Int32 = 4096
            setsockopt(stuck, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            try TestSockets.sendAll(stuck, Array("GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8))
            let reader = try Curl.start("GET", gateway.url + "/v1/events?since=0", maxTime: 120)

            // The flood ends with the session going idle (polled by type: the whole log is large).
            let floodEnd = ContinuousClock.now + .seconds(60)
            while try await !gateway.logged(type: "session.status").contains(where: {
                $0["data"]?["status"] == "idle" && ($0["seq"]?.int ?? 0) > Int64(flood)
            }) {
                guard ContinuousClock.now < floodEnd else { throw FixtureError("the flood never ended") }
                try await Task.sleep(for: .milliseconds(200))
            }
            let logged = try await gateway.logged().compactMap { $0["seq"]?.int }
            let deadline = ContinuousClock.now + .seconds(30)
            while !(gateway.process?.stderrText.contains("closing a slow event-stream client") ?? false), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(gateway.process?.stderrText.contains("closing a slow event-stream client") == true)
            let read = try await reader.stop(onceItHas: logged.last ?? 0, timeout: .seconds(60)).sseEvents.compactMap(\.id)
            #expect(read == logged)
            let peak = gateway.process?.peakRSSKilobytes ?? 0
            #expect(peak > 0 && peak < 200_000, "peak RSS \(peak) kB")
        }
    }

    /// Without tokens, a web page on another site, or one whose name was made to point at the
    /// gateway (DNS rebinding), cannot drive it; the gateway's own page and non-browser clients can.
    @Test func anOpenGatewayAnswersItsOwnPageAndNotOtherSites() async throws {
        try await withGateway { gateway in
            try await gateway.start()
            let port = URL(string: gateway.url)?.port ?? 0
            #expect(try await gateway.get("/v1/profiles").status == 200)
            // Nothing to log out of: the page hides "Log out".
            #expect(try await gateway.get("/v1/health").json?["auth"] == "none")
            #expect(try await gateway.get("/v1/profiles", headers: ["Origin: \(gateway.url)"]).status == 200)
            let crossSite = try await gateway.post("/v1/profiles/oc/sessions", json: "{}", headers: ["Origin: https://evil.example"])
            #expect(crossSite.status == 403 && crossSite.body.contains("evil.example"), "\(crossSite.body)")
            let rebound = try await gateway.get("/v1/profiles", headers: ["Host: evil.example:\(port)"])
            #expect(rebound.status == 403 && rebound.body.contains("does not answer to the name evil.example"), "\(rebound.body)")
        }
    }

    /// A turn posted to a session the Codex Worker does not have is refused, and nothing keeps
    /// following that id: the follow started before the send, polled the missing thread for
    /// good, and marked the whole profile reconnecting at each failure.
    @Test func aTurnForAMissingSessionStartsNoFollow() async throws {
        try await withGatewayOverAWorker { gateway, _ in
            let missing = "019a0000-0000-7000-8000-00000000dead"
            let refused = try await gateway.post("/v1/profiles/w/sessions/\(missing)/turns", json: "{\"text\":\"hello\"}")
            #expect(refused.status == 404, "\(refused.status) \(refused.body)")
            // A follow of it would look at its jobs at once, and log what it found (an error).
            try await Task.sleep(for: .seconds(2))
            let profile = try await gateway.get("/v1/profiles").json?.array?.first { $0["name"] == "w" }
            #expect(profile?["connection"]?["state"] != "reconnecting", "\(profile.map { "\($0)" } ?? "none")")
            let logged = try await gateway.logged().filter { $0["session"]?.string == missing }
            #expect(logged.isEmpty, "\(logged)")
        }
    }

    /// One backend down: the others' approvals are listed, and the header names the one that
    /// could not be asked, so the page keeps its cards instead of dropping them.
    @Test func approvalsSayWhichProfileCouldNotBeAsked() async throws {
        let refusing = try TestSockets.refusingPort()
        defer { close(refusing.holder) }
        // A quoted TOML key: a name with a comma and a non-ASCII letter survives the header.
        let other = "[profiles.\"down, café\"]\nbackend = \"opencode\"\nurl = \"http://127.0.0.1:\(refusing.port)\""
        try await withGateway(serveTable: other) { gateway in
            try await gateway.start()
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.approvalPrompt)
            try await gateway.waitForLogged(Self.isType("approval.requested"))
            let listed = try await gateway.get("/v1/approvals")
            #expect(listed.status == 200)
            #expect(listed.json?.array?.compactMap { $0["profile"]?.string } == ["oc"], "\(listed.body)")
            #expect(listed.headers["tether-unavailable-profiles"] == "down%2C%20caf%C3%A9", "\(listed.headers)")
            let one = try await gateway.get("/v1/approvals?profile=oc")
            #expect(one.status == 200 && one.headers["tether-unavailable-profiles"] == nil)
        }
    }

    /// `-p` before `serve`, as every other command takes it, selects the served profile; it was
    /// ignored and every profile of the config was served.
    @Test func aProfileNamedBeforeServeIsTheOneServed() async throws {
        let other = "[profiles.other]\nbackend = \"opencode\"\nurl = \"http://127.0.0.1:9\""
        try await withGateway(serveTable: other) { gateway in
            for arguments in [["-p", "oc", "serve"], ["--profile=oc", "serve"], ["serve", "-p", "oc"]] {
                let process = try TetherProcess(["--config", gateway.config.path] + arguments
                                                    + ["--listen", "127.0.0.1:0", "--db", gateway.database],
                                                environment: gateway.environment)
                let line = try await process.waitForLine { $0.hasPrefix("{\"listen\"") }
                process.terminate()
                _ = try await process.finish()
                #expect(try JSONParser.parse(line)["profiles"] == ["oc"], "\(arguments): \(line)")
            }
        }
    }

    @Test func aNetworkListenWithoutATokenExits78() async throws {
        try await withGateway { gateway in
            let result = try await TetherProcess.run(["--config", gateway.config.path, "serve", "--listen", "0.0.0.0:0",
                                                      "--db", gateway.database], environment: gateway.environment)
            #expect(result.status == 78)
            #expect(result.stderr.contains("tokens"))
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func aCursorOlderThanRetentionGetsCursorExpiredThenTheRest() async throws {
        // 0.00001 days is 0.86 s; the first trim runs 5 s after start.
        try await withGateway { gateway in
            try await gateway.start(["--retain", "0.00001"])
            let session = try await gateway.createSession()
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged(Self.isType("turn.completed"))
            let oldLast = try #require(try await gateway.logged().last?["seq"]?.int)
            try await Task.sleep(for: .seconds(6))
            try await gateway.startTurn(session, Self.plainPrompt)
            try await gateway.waitForLogged { $0["type"] == "turn.completed" && ($0["seq"]?.int ?? 0) > oldLast }

            // The long-poll form starts with the same cursor_expired error, then the kept events.
            let polled = try await gateway.logged()
            #expect(polled.first?["type"] == "error" && polled.first?["data"]?["code"] == "cursor_expired")
            let kept = polled.dropFirst().compactMap { $0["seq"]?.int }
            let oldest = try #require(kept.first)
            #expect(oldest > oldLast)
            #expect(polled.first?["seq"]?.int == oldest - 1)
            let stream = try await gateway.stream("/v1/events?since=1", through: kept.last ?? 0).sseEvents
            let first = try #require(stream.first)
            let error = try JSONParser.parse(first.data)
            #expect(error["type"] == "error" && error["data"]?["code"] == "cursor_expired")
            #expect(first.id == (error["data"]?["oldest"]?.int ?? 0) - 1)
            #expect(stream.dropFirst().compactMap(\.id) == kept.filter { $0 > first.id! })
        }
    }
}
