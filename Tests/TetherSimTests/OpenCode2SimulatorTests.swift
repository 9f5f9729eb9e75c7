import Foundation
import Testing
import TetherSim

/// The 2.x simulator's wire, byte-level, against protocols/opencode-v2.md (no adapter involved).
@Suite("OpenCode simulator: generation 2 (/api/*)")
struct OpenCode2SimulatorTests {
    var options: OpenCodeSimulator.Options {
        var options = OpenCodeSimulator.Options(password: "secret")
        options.generation = 2
        return options
    }

    /// A cursor as the simulator makes them (opaque to clients).
    static func cursorAt(_ offset: Int) -> String {
        Data("{\"offset\":\(offset)}".utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    func createSession(_ base: URL, directory: String = "/home/dev/app") async throws -> String {
        let created = try await RawHTTP.post(base, "/api/session", json: #"{"title":"t","location":{"directory":"\#(directory)"}}"#,
                                             headers: basicAuth())
        #expect(created.status == 200)
        let data = try created.object()["data"] as? [String: Any]
        #expect(data?[path: "location", "directory"] as? String == directory)
        return try #require(data?["id"] as? String)
    }

    @Test("only /api/*; Basic auth always, 401 tagged; /api/info in {data}")
    func authAndInfo() async throws {
        try await withSimulator(options) { _, base in
            let refused = try await RawHTTP.get(base, "/api/info")
            #expect(refused.status == 401)
            #expect(refused.headers["www-authenticate"] == #"Basic realm="Secure Area""#)
            #expect(try refused.object()["_tag"] as? String == "UnauthorizedError")
            let info = try await RawHTTP.get(base, "/api/info", headers: basicAuth())
            #expect(info.status == 200)
            #expect(try info.object()[path: "data", "version"] as? String == "2.0.17-fake")
            #expect(try await RawHTTP.get(base, "/global/health", headers: basicAuth()).status == 404)
            #expect(try await RawHTTP.get(base, "/session", headers: basicAuth()).status == 404)
            #expect(try await RawHTTP.get(base, "/api/health", headers: basicAuth()).status == 404)
        }
    }

    @Test("sessions: create with location.directory, list with ?directory=, get, 404 tagged")
    func sessions() async throws {
        try await withSimulator(options) { _, base in
            let id = try await createSession(base)
            let list = try await RawHTTP.get(base, "/api/session?directory=/home/dev/app", headers: basicAuth()).object()
            #expect((list["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])
            #expect(list["cursor"] != nil)
            let one = try await RawHTTP.get(base, "/api/session/\(id)", headers: basicAuth()).object()
            #expect(one[path: "data", "id"] as? String == id)
            let missing = try await RawHTTP.get(base, "/api/session/ses_nope", headers: basicAuth())
            #expect(missing.status == 404)
            #expect(try missing.object()["_tag"] as? String == "SessionNotFoundError")
        }
    }

    @Test("the session list pages: {data, cursor: {next}}, the next page by ?cursor=, a bad cursor 400")
    func sessionListPages() async throws {
        try await withSimulator(options) { _, base in
            var created: [String] = []
            for _ in 0..<5 { created.append(try await createSession(base)) }
            var seen: [String] = []
            var path = "/api/session?directory=/home/dev/app&limit=2"
            for _ in 0..<5 {
                let page = try await RawHTTP.get(base, path, headers: basicAuth()).object()
                seen += (page["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
                guard let next = page[path: "cursor", "next"] as? String else { break }
                path = "/api/session?directory=/home/dev/app&limit=2&cursor=\(next)"
            }
            #expect(seen.count == 5 && Set(seen) == Set(created))
            let bad = try await RawHTTP.get(base, "/api/session?cursor=nope", headers: basicAuth())
            #expect(bad.status == 400)
            #expect(try bad.object()["_tag"] as? String == "InvalidCursorError")
            // Messages page the same way; a cursor carries its order, so `order` beside it is refused.
            let messages = "/api/session/\(created[0])/message"
            let first = try await RawHTTP.get(base, messages + "?order=desc&limit=1", headers: basicAuth()).object()
            #expect(first[path: "cursor", "next"] == nil)  // an empty history: one page
            let cursor = Self.cursorAt(0)
            let both = try await RawHTTP.get(base, messages + "?order=asc&cursor=\(cursor)", headers: basicAuth())
            #expect(both.status == 400)
        }
    }

    @Test("prompt → inbox item; the turn streams with ordinals, ends with execution.succeeded; history is the union")
    func aPlainTurn() async throws {
        try await withSimulator(options) { simulator, base in
            let id = try await createSession(base)
            let stream = try await RawHTTP.openStream(base, "/api/event", headers: basicAuth())
            defer { stream.close() }
            let first = try #require(try await stream.nextEvent())
            #expect(first["type"] as? String == "server.connected")
            let prompt = try await RawHTTP.post(base, "/api/session/\(id)/prompt", json: #"{"text":"Say hello"}"#, headers: basicAuth())
            #expect(prompt.status == 200)
            let item = try #require(try prompt.object()["data"] as? [String: Any])
            #expect(Set(item.keys) == ["delivery", "id", "payload", "sessionID", "time", "type"])
            var types: [String] = []
            var seqs: [Int] = []
            while let event = try await stream.nextEvent() {
                let type = try #require(event["type"] as? String)
                types.append(type)
                if let seq = event[path: "durable", "seq"] as? Int { seqs.append(seq) }
                if type.hasSuffix(".delta") {
                    #expect(event["durable"] == nil)
                    #expect(event[path: "data", "ordinal"] as? Int == 0)
                }
                if type == "session.execution.succeeded" { break }
            }
            #expect(types.contains("session.input.promoted"))
            #expect(types.firstIndex(of: "session.execution.started")! < types.firstIndex(of: "session.text.delta")!)
            // session.created was seq 1, before this stream opened; then no gap.
            #expect(seqs == Array(2..<(seqs.count + 2)))
            try await simulator.waitUntilIdle(id)
            let history = try await RawHTTP.get(base, "/api/session/\(id)/message?order=asc", headers: basicAuth()).object()
            let messages = try #require(history["data"] as? [[String: Any]])
            #expect(messages.map { $0["type"] as? String } == ["user", "assistant", "idle"])
            #expect(messages[0]["id"] as? String == item["id"] as? String)
            #expect((messages[1]["content"] as? [[String: Any]])?.first?["text"] as? String == "Fake model reply. You said: Say hello")
            #expect(try await RawHTTP.get(base, "/api/session/\(id)/message?limit=201", headers: basicAuth()).status == 400)
        }
    }

    @Test("the durable log: replay after a seq, log.synced, then follow; no deltas")
    func durableLog() async throws {
        try await withSimulator(options) { simulator, base in
            let id = try await createSession(base)
            _ = try await RawHTTP.post(base, "/api/session/\(id)/prompt", json: #"{"text":"Say hello"}"#, headers: basicAuth())
            try await simulator.waitUntilIdle(id)
            let whole = try await RawHTTP.get(base, "/api/experimental/session/\(id)/log?after=0", headers: basicAuth())
            let frames = whole.text.components(separatedBy: "\n\n").filter { $0.hasPrefix("data: ") }
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.dropFirst(6).utf8)) as? [String: Any] }
            let last = try #require(frames.last)
            #expect(last["type"] as? String == "log.synced")
            let count = frames.count - 1
            #expect(last["seq"] as? Int == count)
            #expect(!frames.contains { ($0["type"] as? String)?.hasSuffix(".delta") == true })

            let follow = try await RawHTTP.openStream(base, "/api/experimental/session/\(id)/log?after=\(count - 2)&follow=true", headers: basicAuth())
            defer { follow.close() }
            #expect(try await follow.nextEvent()?[path: "durable", "seq"] as? Int == count - 1)
            #expect(try await follow.nextEvent()?[path: "durable", "seq"] as? Int == count)
            #expect(try await follow.nextEvent()?["type"] as? String == "log.synced")
            _ = try await RawHTTP.post(base, "/api/session/\(id)/prompt", json: #"{"text":"Say hello"}"#, headers: basicAuth())
            let next = try #require(try await follow.nextEvent())
            #expect(next[path: "durable", "seq"] as? Int == count + 1)
            #expect(next["type"] as? String == "session.input.admitted")
        }
    }

    @Test("permissions: listed per session, {decision} → 204, {reply} → 400, unknown → 404")
    func permissions() async throws {
        try await withSimulator(options) { simulator, base in
            let id = try await createSession(base)
            _ = try await RawHTTP.post(base, "/api/session/\(id)/prompt", json: #"{"text":"Clean the build dir"}"#, headers: basicAuth())
            let request = try await simulator.waitForPendingPermission()
            let listed = try await RawHTTP.get(base, "/api/session/\(id)/permission", headers: basicAuth()).object()
            let pending = try #require((listed["data"] as? [[String: Any]])?.first)
            #expect(pending["id"] as? String == request)
            #expect(pending["action"] as? String == "shell")
            #expect(pending["resources"] as? [String] == ["rm -rf build"])
            let old = try await RawHTTP.post(base, "/api/session/\(id)/permission/\(request)/reply", json: #"{"reply":"once"}"#, headers: basicAuth())
            #expect(old.status == 400)
            #expect(try old.object()["message"] as? String == #"Missing key at ["decision"]"#)
            let unknown = try await RawHTTP.post(base, "/api/session/\(id)/permission/per_nope/reply", json: #"{"decision":"once"}"#, headers: basicAuth())
            #expect(unknown.status == 404)
            #expect(try unknown.object()["_tag"] as? String == "PermissionNotFoundError")
            let ok = try await RawHTTP.post(base, "/api/session/\(id)/permission/\(request)/reply", json: #"{"decision":"once"}"#, headers: basicAuth())
            #expect(ok.status == 204)
            try await simulator.waitUntilIdle(id)
            let history = try await RawHTTP.get(base, "/api/session/\(id)/message?order=asc", headers: basicAuth()).object()
            let types = (history["data"] as? [[String: Any]])?.map { $0["type"] as? String }
            #expect(types == ["user", "assistant", "assistant", "idle"])
        }
    }

    @Test("interrupt: {interrupted: true} mid-turn, the idle message says interrupted; false when idle")
    func interrupt() async throws {
        try await withSimulator(options) { simulator, base in
            let id = try await createSession(base)
            _ = try await RawHTTP.post(base, "/api/session/\(id)/prompt", json: #"{"text":"Clean the build dir"}"#, headers: basicAuth())
            _ = try await simulator.waitForPendingPermission()
            let stopped = try await RawHTTP.post(base, "/api/session/\(id)/interrupt", headers: basicAuth()).object()
            #expect(stopped["interrupted"] as? Bool == true)
            #expect(try await simulator.pendingPermissionIDs().isEmpty)
            let history = try await RawHTTP.get(base, "/api/session/\(id)/message", headers: basicAuth()).object()
            let newest = try #require((history["data"] as? [[String: Any]])?.first)  // desc by default
            #expect(newest["type"] as? String == "idle" && newest["outcome"] as? String == "interrupted")
            let again = try await RawHTTP.post(base, "/api/session/\(id)/interrupt", headers: basicAuth()).object()
            #expect(again["interrupted"] as? Bool == false)
        }
    }

    @Test("forms: a question form, answered by {answer} keyed by field; reject is DELETE")
    func forms() async throws {
        try await withSimulator(options) { simulator, base in
            let id = try await createSession(base)
            _ = try await RawHTTP.post(base, "/api/session/\(id)/prompt", json: #"{"text":"Ask me which to choose"}"#, headers: basicAuth())
            var form: [String: Any]?
            for _ in 0..<200 where form == nil {
                form = (try await RawHTTP.get(base, "/api/session/\(id)/form", headers: basicAuth()).object()["data"] as? [[String: Any]])?.first
                if form == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            let pending = try #require(form)
            #expect(pending[path: "metadata", "kind"] as? String == "question")
            let formID = try #require(pending["id"] as? String)
            let bad = try await RawHTTP.post(base, "/api/session/\(id)/form/\(formID)/reply", json: #"{"answer":{"q0":{"x":1}}}"#, headers: basicAuth())
            #expect(bad.status == 400)
            let ok = try await RawHTTP.post(base, "/api/session/\(id)/form/\(formID)/reply", json: #"{"answer":{"q0":"dist"}}"#, headers: basicAuth())
            #expect(ok.status == 204)
            try await simulator.waitUntilIdle(id)
            let gone = try await RawHTTP.request("DELETE", base, "/api/session/\(id)/form/\(formID)", headers: basicAuth())
            #expect(gone.status == 404)
            #expect(try gone.object()["_tag"] as? String == "FormNotFoundError")
        }
    }

    @Test("the session model route: session.model.selected, and later turns use it")
    func model() async throws {
        try await withSimulator(options) { simulator, base in
            let id = try await createSession(base)
            let bad = try await RawHTTP.post(base, "/api/session/\(id)/model", json: #"{"providerID":"openai"}"#, headers: basicAuth())
            #expect(bad.status == 400)
            let set = try await RawHTTP.post(base, "/api/session/\(id)/model", json: #"{"model":{"providerID":"openai","id":"gpt-5"}}"#, headers: basicAuth())
            #expect(try set.object()[path: "data", "model", "id"] as? String == "gpt-5")
            _ = try await RawHTTP.post(base, "/api/session/\(id)/prompt", json: #"{"text":"Say hello"}"#, headers: basicAuth())
            try await simulator.waitUntilIdle(id)
            let history = try await RawHTTP.get(base, "/api/session/\(id)/message?order=asc", headers: basicAuth()).object()
            let assistant = (history["data"] as? [[String: Any]])?.first { $0["type"] as? String == "assistant" }
            #expect(assistant?[path: "model", "providerID"] as? String == "openai")
        }
    }
}
