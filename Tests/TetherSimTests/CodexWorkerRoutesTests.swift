import Foundation
import Testing
@testable import TetherSim

@Suite("Codex Worker simulator: routes, auth, threads, history")
struct CodexWorkerRoutesTests {
    static let authed = CodexWorkerSimulator.Options(token: "s3cret", pingInterval: .milliseconds(100))

    @Test("/health needs no token and reports authEnabled")
    func health() async throws {
        try await CWHarness.with(Self.authed) { harness in
            let health = try await harness.request("GET", "/health", auth: false)
            #expect(health.status == 200)
            #expect(health.text == #"{"status":"ok","authEnabled":true}"#)
        }
        try await CWHarness.with { harness in
            let health = try await harness.request("GET", "/health")
            #expect(health.json["authEnabled"] as? Bool == false)
        }
    }

    @Test("auth runs before routing: 401 UNAUTHORIZED even for unknown paths; then 404 NOT_FOUND")
    func authBeforeRouting() async throws {
        try await CWHarness.with(Self.authed) { harness in
            for path in ["/v1/projects", "/nope", "/v1/threads/x/turns"] {
                let response = try await harness.request("GET", path, auth: false)
                #expect(response.status == 401 && response.errorCode == "UNAUTHORIZED", "\(path)")
                #expect((response.json["error"] as? [String: Any])?["message"] is String)
            }
            let wrong = try await harness.request("GET", "/v1/projects", headers: ["Authorization": "Bearer nope"], auth: false)
            #expect(wrong.status == 401)
            let padded = try await harness.request("GET", "/v1/projects", headers: ["Authorization": "Bearer s3cret  "], auth: false)
            #expect(padded.status == 200)
            let unknown = try await harness.request("GET", "/nope")
            #expect(unknown.status == 404 && unknown.errorCode == "NOT_FOUND")
            // A method with no route on an existing path is 404 too.
            let wrongMethod = try await harness.request("GET", "/v1/threads/x/turns")
            #expect(wrongMethod.status == 404 && wrongMethod.errorCode == "NOT_FOUND")
            #expect(harness.sim.requestLog.contains { $0.path == "/nope" && $0.status == 401 })
        }
    }

    @Test("projects and models")
    func projectsAndModels() async throws {
        try await CWHarness.with { harness in
            let projects = try await harness.request("GET", "/v1/projects")
            #expect(projects.text == #"{"data":[{"projectId":"proj_1","projectPath":"/home/dev/demo","displayName":"demo"}]}"#)
            let models = try await harness.request("GET", "/v1/models").json
            let first = try #require((models["data"] as? [[String: Any]])?.first)
            #expect(first.keys.sorted() == ["contextWindow", "displayName", "id", "name", "provider", "reasoning"])
        }
    }

    @Test("threads: create (201) with project selectors, list only after a turn, archive/unarchive, activate")
    func threads() async throws {
        let options = CodexWorkerSimulator.Options(projects: ["/srv/a", "/srv/b"], pingInterval: .milliseconds(100))
        try await CWHarness.with(options) { harness in
            let created = try await harness.request("POST", "/v1/threads", json: ["projectId": "proj_2", "threadName": "x"])
            #expect(created.status == 201)
            let thread = try #require(created.json["thread"] as? [String: Any])
            #expect(thread["cwd"] as? String == "/srv/b")
            #expect(thread.keys.sorted() == [
                "createdAt", "cwd", "modelProvider", "pendingApprovalCount", "preview", "threadId", "updatedAt",
            ])
            #expect(thread["createdAt"] is Int)
            let threadId = try #require(thread["threadId"] as? String)

            let both = try await harness.request("POST", "/v1/threads", json: ["projectId": "proj_1", "projectPath": "/p"])
            #expect(both.status == 400 && both.errorCode == "INVALID_PROJECT_SELECTOR")
            let unknown = try await harness.request("POST", "/v1/threads", json: ["projectId": "proj_9"])
            #expect(unknown.status == 400 && unknown.errorCode == "PROJECT_NOT_FOUND")
            let byPath = try await harness.request("POST", "/v1/threads", json: ["projectPath": "/tmp/x", "sandbox": "bogus"])
            #expect((byPath.json["thread"] as? [String: Any])?["cwd"] as? String == "/tmp/x")
            let empty = try await harness.request("POST", "/v1/threads")
            #expect((empty.json["thread"] as? [String: Any])?["cwd"] as? String == "/srv/a")

            // Not listed until it has had a turn.
            var list = try await harness.request("GET", "/v1/threads").json
            #expect((list["data"] as? [Any])?.isEmpty == true)
            #expect(list["nextCursor"] is NSNull)
            let job = try await harness.startTurn(threadId, "say hello")
            try await harness.wait(job, for: "DONE")
            list = try await harness.request("GET", "/v1/threads").json
            let listed = try #require((list["data"] as? [[String: Any]])?.first)
            #expect(listed["threadId"] as? String == threadId)
            #expect(listed["preview"] as? String == "say hello")

            let archived = try await harness.request("POST", "/v1/threads/\(threadId)/archive")
            #expect(archived.text == #"{"threadId":"\#(threadId)","status":"archived"}"#)
            #expect((try await harness.request("GET", "/v1/threads").json["data"] as? [Any])?.isEmpty == true)
            #expect((try await harness.request("GET", "/v1/threads?archived=true").json["data"] as? [Any])?.count == 1)
            #expect((try await harness.request("GET", "/v1/threads?archived=1").json["data"] as? [Any])?.count == 1)
            let bad = try await harness.request("GET", "/v1/threads?archived=maybe")
            #expect(bad.status == 400 && bad.errorCode == "INVALID_ARCHIVED")
            let unarchived = try await harness.request("POST", "/v1/threads/\(threadId)/unarchive")
            #expect(unarchived.json["status"] as? String == "active")
            let failed = try await harness.request("POST", "/v1/threads/nope/archive")
            #expect(failed.status == 502 && failed.errorCode == "THREAD_ARCHIVE_FAILED")

            let activated = try await harness.request("POST", "/v1/threads/\(threadId)/activate")
            #expect((activated.json["thread"] as? [String: Any])?["threadId"] as? String == threadId)
            let missing = try await harness.request("POST", "/v1/threads/nope/activate")
            #expect(missing.status == 500 && missing.errorCode == "INTERNAL_ERROR")
        }
    }

    @Test("bodies: empty is {}, bad JSON is 400 INVALID_JSON, over 1 MiB is 413")
    func bodies() async throws {
        try await CWHarness.with { harness in
            let bad = try await harness.request("POST", "/v1/threads", raw: Data("{nope".utf8))
            #expect(bad.status == 400 && bad.errorCode == "INVALID_JSON")
            let big = try await harness.request("POST", "/v1/threads", raw: Data(repeating: 0x20, count: (1 << 20) + 10))
            #expect(big.status == 413 && big.errorCode == "PAYLOAD_TOO_LARGE")
            let empty = try await harness.request("POST", "/v1/threads", raw: Data())
            #expect(empty.status == 201)
        }
    }

    @Test("thread history: synthesized messages and terminal events, seq per turn, index paging")
    func historyPaging() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let empty = try await harness.request("GET", "/v1/threads/\(thread)/events")
            #expect(empty.text == #"{"data":[],"nextCursor":-1,"hasMore":false}"#)

            let first = try await harness.startTurn(thread, "hello one")
            try await harness.wait(first, for: "DONE")
            let second = try await harness.startTurn(thread, "this will fail")
            try await harness.wait(second, for: "FAILED")

            let all = try await harness.request("GET", "/v1/threads/\(thread)/events").json
            let data = try #require(all["data"] as? [[String: Any]])
            // Turn 1: user, agent, job.state, job.finished. Turn 2: user, error, job.state, job.finished.
            #expect(data.cwTypes == [
                "item.completed", "item.completed", "job.state", "job.finished",
                "item.completed", "error", "job.state", "job.finished",
            ])
            #expect(data.compactMap { $0["seq"] as? Int } == [0, 1, 2, 3, 0, 1, 2, 3])
            #expect(data.prefix(4).allSatisfy { $0["jobId"] as? String == first })
            #expect(data.suffix(4).allSatisfy { $0["jobId"] as? String == second })
            #expect(all["nextCursor"] as? Int == 7 && all["hasMore"] as? Bool == false)
            let user = try #require((data[0]["payload"] as? [String: Any])?["item"] as? [String: Any])
            #expect(user.keys.sorted() == ["content", "id", "type"])
            #expect(user["type"] as? String == "userMessage")
            let agent = try #require((data[1]["payload"] as? [String: Any])?["item"] as? [String: Any])
            #expect(agent.keys.sorted() == ["id", "text", "type"])
            #expect((data[1]["payload"] as? [String: Any])?["itemId"] as? String == agent["id"] as? String)
            #expect((data[5]["payload"] as? [String: Any])?["message"] is String)
            #expect((data[6]["payload"] as? [String: Any])?["state"] as? String == "FAILED")

            let page1 = try await harness.request("GET", "/v1/threads/\(thread)/events?limit=3").json
            #expect((page1["data"] as? [Any])?.count == 3)
            #expect(page1["nextCursor"] as? Int == 2 && page1["hasMore"] as? Bool == true)
            let page2 = try await harness.request("GET", "/v1/threads/\(thread)/events?cursor=2&limit=3").json
            #expect(((page2["data"] as? [[String: Any]])?.first?["type"] as? String) == "job.finished")
            #expect(page2["nextCursor"] as? Int == 5 && page2["hasMore"] as? Bool == true)
            let page3 = try await harness.request("GET", "/v1/threads/\(thread)/events?cursor=5&limit=3").json
            #expect(page3["nextCursor"] as? Int == 7 && page3["hasMore"] as? Bool == false)
            let end = try await harness.request("GET", "/v1/threads/\(thread)/events?cursor=7").json
            #expect((end["data"] as? [Any])?.isEmpty == true && end["nextCursor"] as? Int == 7)

            let expired = try await harness.request("GET", "/v1/threads/\(thread)/events?cursor=8")
            #expect(expired.status == 409 && expired.errorCode == "THREAD_CURSOR_EXPIRED")
            let badCursor = try await harness.request("GET", "/v1/threads/\(thread)/events?cursor=-2")
            #expect(badCursor.status == 400 && badCursor.errorCode == "INVALID_CURSOR")
            let badLimit = try await harness.request("GET", "/v1/threads/\(thread)/events?limit=0")
            #expect(badLimit.status == 400 && badLimit.errorCode == "INVALID_LIMIT")
            let unknown = try await harness.request("GET", "/v1/threads/nope/events")
            #expect(unknown.status == 200 && (unknown.json["data"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("history of an active job appends its own events with their real seq")
    func historyOfActiveJob() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "run the build")
            try await harness.wait(job, for: "WAITING_APPROVAL")
            let data = try #require(try await harness.request("GET", "/v1/threads/\(thread)/events").json["data"] as? [[String: Any]])
            #expect(data.first?["type"] as? String == "job.created")
            #expect(data.compactMap { $0["seq"] as? Int } == Array(0..<data.count))
            #expect(data.last?["type"] as? String == "approval.required")
        }
    }

    @Test("prompt keywords choose the script", arguments: [
        ("hello", CodexWorkerSimulator.Script.reply),
        ("please run the build", .commandApproval),
        ("Approve me", .commandApproval),
        ("edit the README", .fileChangeApproval),
        ("touch that file", .fileChangeApproval),
        ("this should fail", .fail),
        ("make a plan", .plan),
        ("long 42", .long(42)),
        ("truncate running", .reply),
    ])
    func scriptChoice(prompt: String, script: CodexWorkerSimulator.Script) {
        #expect(CodexWorkerSimulator.Script.choose(for: prompt) == script)
    }

    @Test("the plan script emits a plan item before the reply")
    func planItem() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "make a plan")
            try await harness.wait(job, for: "DONE")
            let items = try await harness.events(job)
                .filter { $0["type"] as? String == "item.completed" }
                .compactMap { (($0["payload"] as? [String: Any])?["item"] as? [String: Any])?["type"] as? String }
            #expect(items == ["userMessage", "reasoning", "plan", "agentMessage"])
        }
    }
}
