import Foundation
import Testing
import TetherSim

@Suite("OpenCode simulator: scripted turns over HTTP (notes §8, §9)")
struct OpenCodeTurnTests {
    @Test("permission turn: prompt_async → frames → permission.asked → reply once → two assistant messages → idle; REST agrees")
    func permissionTurnOnce() async throws {
        try await withSimulator { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            #expect(try await stream.nextPayload()?.type == "server.connected")

            let accepted = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: cleanPrompt)
            #expect(accepted.status == 204)
            #expect(accepted.body.isEmpty)

            let phase1 = try await stream.payloads(through: "permission.asked")
            let types = phase1.compactMap(\.type)
            #expect(Array(types.prefix(3)) == ["message.updated", "message.part.updated", "session.status"])
            #expect(phase1[0].info["role"] as? String == "user")
            #expect(phase1[1].part["text"] as? String == "Clean the build dir and say done")
            #expect(phase1[2].properties["status"] as? [String: String] == ["type": "busy"])
            #expect(types.contains("message.part.delta"))
            #expect(phase1.contains { $0.part["type"] as? String == "reasoning" })
            #expect(phase1.contains { $0.part["type"] as? String == "step-start" })
            let texts = phase1.filter { $0.part["type"] as? String == "text" && $0.part["messageID"] as? String != phase1[0].info["id"] as? String }
            #expect(texts.first?.part["text"] as? String == "")
            #expect(texts.last?.part["text"] as? String == "I'll remove the build directory.")
            #expect(texts.last?.part[path: "time", "end"] != nil)
            let toolStates = phase1.filter { $0.part["type"] as? String == "tool" }.compactMap { $0.part[path: "state", "status"] as? String }
            #expect(toolStates == ["pending", "running"])
            let asked = try #require(phase1.last).properties
            let requestID = try #require(asked["id"] as? String)
            #expect(requestID.hasPrefix("per_"))
            #expect(asked["patterns"] as? [String] == ["rm -rf build"])
            #expect(asked["always"] as? [String] == ["rm *"])
            let firstAssistantID = try #require(asked[path: "tool", "messageID"] as? String)

            // While waiting: pending over REST, session busy, text part final.
            let pending = try await RawHTTP.get(base, "/permission").array()
            #expect(pending.map { $0["id"] as? String } == [requestID])
            let status = try await RawHTTP.get(base, "/session/status").object()
            #expect(status[fixtureSession] as? [String: String] == ["type": "busy"])

            let reply = try await RawHTTP.post(base, "/permission/\(requestID)/reply", json: #"{"reply":"once"}"#)
            #expect(reply.text == "true")

            let phase2 = try await stream.payloads(through: "session.idle")
            let types2 = phase2.compactMap(\.type)
            #expect(types2.first == "permission.replied")
            #expect(phase2[0].properties["reply"] as? String == "once")
            #expect(phase2[0].properties["requestID"] as? String == requestID)
            #expect(phase2[1].part[path: "state", "status"] as? String == "completed")
            #expect(types2.contains("todo.updated"))
            #expect(Array(types2.suffix(2)) == ["session.status", "session.idle"])
            let assistants = phase2.filter { $0.type == "message.updated" }.map(\.info)
            let first = try #require(assistants.first { $0["id"] as? String == firstAssistantID })
            #expect(first["finish"] as? String == "tool-calls")
            #expect(first[path: "time", "completed"] != nil)
            let second = try #require(assistants.last)
            #expect(second["id"] as? String != firstAssistantID)
            #expect(second["parentID"] as? String == first["parentID"] as? String)
            #expect(second["finish"] as? String == "stop")
            let stepFinishes = phase2.filter { $0.part["type"] as? String == "step-finish" }.map { $0.part["reason"] as? String }
            #expect(stepFinishes == ["tool-calls", "stop"])

            // REST after idle: final snapshots, nothing pending, not busy.
            try await simulator.waitUntilIdle(fixtureSession)
            #expect(try await RawHTTP.get(base, "/permission").array().isEmpty)
            #expect(try await RawHTTP.get(base, "/session/status").object().isEmpty)
            let messages = try await RawHTTP.get(base, "/session/\(fixtureSession)/message").array()
            #expect(messages.count == 3)
            let roles = messages.compactMap { ($0["info"] as? [String: Any])?["role"] as? String }
            #expect(roles == ["user", "assistant", "assistant"])
            let lastParts = try #require(messages.last?["parts"] as? [[String: Any]])
            #expect(lastParts.compactMap { $0["type"] as? String } == ["step-start", "text", "step-finish"])
            #expect(lastParts[1]["text"] as? String == "Done. The build directory has been removed.")
            let firstParts = try #require(messages[1]["parts"] as? [[String: Any]])
            #expect(firstParts.compactMap { $0["type"] as? String } == ["step-start", "reasoning", "text", "tool", "step-finish"])
            #expect(firstParts[3][path: "state", "status"] as? String == "completed")
            let todos = try await RawHTTP.get(base, "/session/\(fixtureSession)/todo").array()
            #expect(todos.first?["status"] as? String == "completed")
        }
    }

    @Test("reject: permission.replied reject, tool error, message completed, idle")
    func permissionTurnReject() async throws {
        try await withSimulator { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: cleanPrompt)
            let asked = try #require(try await stream.payloads(through: "permission.asked").last)
            let requestID = try #require(asked.properties["id"] as? String)
            #expect(try await RawHTTP.post(base, "/permission/\(requestID)/reply", json: #"{"reply":"reject"}"#).text == "true")

            let frames = try await stream.payloads(through: "session.idle")
            #expect(frames.compactMap(\.type) == ["permission.replied", "message.part.updated", "message.updated", "session.status", "session.idle"])
            #expect(frames[0].properties["reply"] as? String == "reject")
            #expect(frames[1].part[path: "state", "status"] as? String == "error")
            #expect(frames[1].part[path: "state", "error"] as? String == "The user rejected permission to use this specific tool call.")
            #expect(frames[2].info[path: "time", "completed"] != nil)

            try await simulator.waitUntilIdle(fixtureSession)
            let messages = try await RawHTTP.get(base, "/session/\(fixtureSession)/message").array()
            #expect(messages.count == 2)
            let tool = (messages[1]["parts"] as? [[String: Any]])?.first { $0["type"] as? String == "tool" }
            #expect(tool?[path: "state", "status"] as? String == "error")
            // A reply to a resolved request is a tagged 404.
            let again = try await RawHTTP.post(base, "/permission/\(requestID)/reply", json: #"{"reply":"once"}"#)
            #expect(again.status == 404)
            #expect(try again.object()["_tag"] as? String == "PermissionNotFoundError")
            #expect(try again.object()["requestID"] as? String == requestID)
        }
    }

    @Test("abort while waiting on a permission: reject, tool aborted, MessageAbortedError, idle")
    func abortWhileWaiting() async throws {
        try await withSimulator { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: cleanPrompt)
            let asked = try #require(try await stream.payloads(through: "permission.asked").last)
            let abort = try await RawHTTP.post(base, "/session/\(fixtureSession)/abort")
            #expect(abort.text == "true")

            let frames = try await stream.payloads(through: "session.idle")
            #expect(frames.compactMap(\.type) == [
                "permission.replied", "message.part.updated", "session.error", "message.updated", "session.status", "session.idle",
            ])
            #expect(frames[0].properties["requestID"] as? String == asked.properties["id"] as? String)
            #expect(frames[0].properties["reply"] as? String == "reject")
            #expect(frames[1].part[path: "state", "error"] as? String == "Tool execution aborted")
            #expect(frames[2].properties[path: "error", "name"] as? String == "MessageAbortedError")
            #expect(frames[3].info[path: "error", "name"] as? String == "MessageAbortedError")
            #expect(frames[3].info[path: "time", "completed"] != nil)

            // The session takes a new prompt afterwards.
            #expect(try await RawHTTP.get(base, "/permission").array().isEmpty)
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            _ = try await stream.payloads(through: "session.idle")
            try await simulator.waitUntilIdle(fixtureSession)
        }
    }

    @Test("abort mid-stream: the streaming text part is finalized with what was sent, then idle")
    func abortMidStream() async throws {
        try await withSimulator(.init(pacing: .milliseconds(40))) { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            let before = try await stream.payloads(through: "message.part.delta")
            let partID = try #require(before.last?.properties["partID"] as? String)

            // §9: while the text streams, REST has the part empty and without time.end.
            let during = try await RawHTTP.get(base, "/session/\(fixtureSession)/message").array()
            let streaming = (during.last?["parts"] as? [[String: Any]])?.first { $0["id"] as? String == partID }
            #expect(streaming?["text"] as? String == "")
            #expect(streaming?[path: "time", "end"] == nil)

            #expect(try await RawHTTP.post(base, "/session/\(fixtureSession)/abort").text == "true")
            let after = try await stream.payloads(through: "session.idle")
            let final = try #require(after.first { $0.type == "message.part.updated" && $0.part["id"] as? String == partID })
            #expect((final.part["text"] as? String)?.hasPrefix("Hello from") == true)
            #expect(final.part[path: "time", "end"] != nil)
            #expect(after.contains { $0.type == "session.error" })
            #expect(!after.contains { $0.part["type"] as? String == "step-finish" })
        }
    }

    @Test("failed: session.error APIError, the message carries the error, idle")
    func failedTurn() async throws {
        try await withSimulator(.init(scenario: .failed)) { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            let frames = try await stream.payloads(through: "session.idle")
            let error = try #require(frames.first { $0.type == "session.error" })
            #expect(error.properties[path: "error", "name"] as? String == "APIError")
            let completed = try #require(frames.last(where: { $0.type == "message.updated" }))
            #expect(completed.info[path: "error", "name"] as? String == "APIError", "\(completed)")
        }
    }

    @Test("question: question.asked, listed by GET /question, answered, idle")
    func questionTurn() async throws {
        try await withSimulator(.init(scenario: .question)) { simulator, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            #expect(try await RawHTTP.get(base, "/question").array().isEmpty)
            _ = try await RawHTTP.post(base, "/session/\(fixtureSession)/prompt_async", json: plainPrompt)
            let asked = try #require(try await stream.payloads(through: "question.asked").last)
            let requestID = try #require(asked.properties["id"] as? String)
            #expect(requestID.hasPrefix("que_"))
            #expect(try await RawHTTP.get(base, "/question").array().map { $0["id"] as? String } == [requestID])

            let reply = try await RawHTTP.post(base, "/question/\(requestID)/reply", json: #"{"answers":[["dist"]]}"#)
            #expect(reply.text == "true")
            let frames = try await stream.payloads(through: "session.idle")
            #expect(frames.first?.type == "question.replied")
            #expect(frames.first?.properties["answers"] as? [[String]] == [["dist"]])
            let finalText = frames.last { $0.part["type"] as? String == "text" }?.part["text"] as? String
            #expect(finalText?.contains("dist") == true)
            try await simulator.waitUntilIdle(fixtureSession)
            #expect(try await RawHTTP.get(base, "/question").array().isEmpty)
        }
    }

    @Test("sessions: create emits session.created, get/404, delete, providers expose a context limit")
    func sessionsAndErrors() async throws {
        try await withSimulator { _, base in
            let stream = try await RawHTTP.openStream(base, "/global/event")
            defer { stream.close() }
            _ = try await stream.nextPayload()
            let created = try await RawHTTP.post(base, "/session", json: "{}").object()
            let id = try #require(created["id"] as? String)
            #expect(id.hasPrefix("ses_") && id.count == 30)
            #expect(created["directory"] as? String == "/home/dev/demo")
            let event = try #require(try await stream.nextPayload())
            #expect(event.type == "session.created")
            #expect(event.info["id"] as? String == id)

            #expect(try await RawHTTP.get(base, "/session/\(id)").object()["id"] as? String == id)
            let missing = try await RawHTTP.get(base, "/session/ses_missing")
            #expect(missing.status == 404)
            #expect(try missing.object()["name"] as? String == "NotFoundError")
            #expect(try await RawHTTP.post(base, "/session/ses_missing/prompt_async", json: plainPrompt).status == 404)
            #expect(try await RawHTTP.post(base, "/session/\(id)/prompt_async", json: "{}").status == 400)

            let listed = try await RawHTTP.get(base, "/session").array().compactMap { $0["id"] as? String }
            #expect(Set(listed) == [id, fixtureSession])
            #expect(try await RawHTTP.request("DELETE", base, "/session/\(id)").text == "true")
            #expect(try await stream.nextPayload()?.type == "session.deleted")
            #expect(try await RawHTTP.get(base, "/session/\(id)").status == 404)

            let providers = try await RawHTTP.get(base, "/config/providers").object()
            let provider = try #require((providers["providers"] as? [[String: Any]])?.first)
            #expect(provider[path: "models", "claude-sonnet-4", "limit", "context"] as? Int == 200_000)
            #expect(providers[path: "default", "anthropic"] as? String == "claude-sonnet-4")
        }
    }
}
