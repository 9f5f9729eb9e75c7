import Foundation
import Testing
@testable import TetherSim

@Suite("Codex Worker simulator: approvals, cancel, failures")
struct CodexWorkerApprovalTests {
    /// Types after `approval.required`, through `job.finished`, with delta runs collapsed.
    func tail(_ events: [[String: Any]]) -> [String] {
        let types = events.cwTypes
        guard let start = types.firstIndex(of: "approval.required") else { return [] }
        return CodexWorkerStreamTests.collapsingDeltas(Array(types[(start + 1)...]))
    }

    @Test("a command approval waits: WAITING_APPROVAL, pendingApprovalCount 1, approval.required fields")
    func commandApprovalRequired() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "run the build")
            let snapshot = try await harness.wait(job, for: "WAITING_APPROVAL")
            #expect(snapshot["pendingApprovalCount"] as? Int == 1)

            let events = try await harness.events(job)
            let types = events.cwTypes
            let started = try #require(types.lastIndex(of: "item.started"))
            #expect(Array(types[started...]) == ["item.started", "job.state", "approval.required"])
            let item = try #require(events[started]["payload"] as? [String: Any])["item"] as? [String: Any]
            #expect(item?["type"] as? String == "commandExecution")
            #expect(item?["status"] as? String == "inProgress")
            #expect((events[started + 1]["payload"] as? [String: Any])?["state"] as? String == "WAITING_APPROVAL")

            let required = try #require(events.cwPayload("approval.required"))
            #expect((required["approvalId"] as? String)?.hasPrefix("appr_") == true)
            #expect((required["approvalId"] as? String)?.count == 21)
            #expect(required["jobId"] as? String == job)
            #expect(required["threadId"] as? String == thread)
            #expect(required["turnId"] as? String == snapshot["turnId"] as? String)
            #expect(required["itemId"] as? String == item?["id"] as? String)
            #expect(required["kind"] as? String == "command_execution")
            #expect(required["requestMethod"] as? String == "item/commandExecution/requestApproval")
            #expect(required["command"] as? String == item?["command"] as? String)
            #expect(required["cwd"] as? String == "/home/dev/demo")
            #expect((required["commandActions"] as? [Any])?.count == 1)
            #expect(required["proposedExecpolicyAmendment"] as? [String] == ["swift", "build"])
            #expect(required.keys.contains("grantRoot") && required.keys.contains("reason") && required.keys.contains("createdAt"))

            // The thread DTO counts the pending approval too.
            let activated = try await harness.request("POST", "/v1/threads/\(thread)/activate").json
            #expect((activated["thread"] as? [String: Any])?["pendingApprovalCount"] as? Int == 1)
        }
    }

    @Test("command approval decisions produce the real event sequences", arguments: [
        ("accept", "completed"), ("accept_for_session", "completed"),
        ("accept_with_execpolicy_amendment", "completed"), ("decline", "declined"), ("cancel", "declined"),
    ])
    func commandDecision(decision: String, itemStatus: String) async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "approve this command")
            try await harness.wait(job, for: "WAITING_APPROVAL")
            let approvalId = try await harness.approvalId(job)
            var body: [String: Any] = ["approvalId": approvalId, "decision": decision]
            if decision == "accept_with_execpolicy_amendment" { body["execPolicyAmendment"] = ["swift", "build"] }
            let reply = try await harness.approve(job, body)
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "submitted")
            #expect(reply.json["decision"] as? String == decision)
            #expect(reply.json["approvalId"] as? String == approvalId)

            let final = decision == "cancel" ? "CANCELLED" : "DONE"
            let snapshot = try await harness.wait(job, for: final)
            #expect(snapshot["pendingApprovalCount"] as? Int == 0)
            let events = try await harness.events(job)
            let expected: [String] = switch decision {
            case "cancel":
                ["approval.resolved", "job.state", "item.completed", "turn.completed", "job.state", "job.finished"]
            case "decline":
                ["approval.resolved", "job.state", "item.completed", "item.started", "item.agentMessage.delta",
                 "item.completed", "turn.completed", "job.state", "job.finished"]
            default:
                ["approval.resolved", "job.state", "item.commandExecution.outputDelta", "item.completed",
                 "item.started", "item.agentMessage.delta", "item.completed", "turn.completed", "job.state", "job.finished"]
            }
            #expect(tail(events) == expected)

            let resolved = try #require(events.cwPayload("approval.resolved"))
            #expect(resolved["approvalId"] as? String == approvalId)
            #expect(resolved["decision"] as? String == decision)
            #expect(resolved["decidedAt"] is String)
            let resolvedIndex = try #require(events.cwTypes.firstIndex(of: "approval.resolved"))
            #expect((events[resolvedIndex + 1]["payload"] as? [String: Any])?["state"] as? String == "RUNNING")

            let commandDone = events.first {
                $0["type"] as? String == "item.completed"
                    && (($0["payload"] as? [String: Any])?["item"] as? [String: Any])?["type"] as? String == "commandExecution"
            }
            let item = try #require((commandDone?["payload"] as? [String: Any])?["item"] as? [String: Any])
            #expect(item["status"] as? String == itemStatus)
            if itemStatus == "completed" {
                #expect(item["exitCode"] as? Int == 0)
                let output = events.filter { $0["type"] as? String == "item.commandExecution.outputDelta" }
                    .compactMap { ($0["payload"] as? [String: Any])?["delta"] as? String }.joined()
                #expect(item["aggregatedOutput"] as? String == output)
            }
            let turn = try #require(events.cwPayload("turn.completed")?["turn"] as? [String: Any])
            #expect(turn["status"] as? String == (decision == "cancel" ? "interrupted" : "completed"))
            #expect(events.cwPayload("job.finished")?["state"] as? String == final)

            // Idempotent: a second submission reports the first decision.
            let again = try await harness.approve(job, ["approvalId": approvalId, "decision": "decline"])
            #expect(again.status == 200)
            #expect(again.json["status"] as? String == "already_submitted")
            #expect(again.json["decision"] as? String == decision)
        }
    }

    @Test("file-change approval: accept applies, decline does not, amendment is refused for the kind")
    func fileChangeDecisions() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            for decision in ["accept", "decline"] {
                let job = try await harness.startTurn(thread, "edit the README file")
                try await harness.wait(job, for: "WAITING_APPROVAL")
                let events = try await harness.events(job)
                let required = try #require(events.cwPayload("approval.required"))
                #expect(required["kind"] as? String == "file_change")
                #expect(required["requestMethod"] as? String == "item/fileChange/requestApproval")
                #expect(required["command"] is NSNull && required["cwd"] is NSNull)
                #expect(required["proposedExecpolicyAmendment"] is NSNull)
                #expect((required["commandActions"] as? [Any])?.isEmpty == true)
                let started = events.last { $0["type"] as? String == "item.started" }
                let item = try #require((started?["payload"] as? [String: Any])?["item"] as? [String: Any])
                #expect(item["type"] as? String == "fileChange")
                let change = try #require((item["changes"] as? [[String: Any]])?.first)
                #expect(change["path"] as? String == "/home/dev/demo/README.md")
                #expect((change["kind"] as? [String: Any])?["type"] as? String == "update")
                #expect(change["diff"] is String)

                let approvalId = try #require(required["approvalId"] as? String)
                let refused = try await harness.approve(job, [
                    "approvalId": approvalId, "decision": "accept_with_execpolicy_amendment", "execPolicyAmendment": ["x"],
                ])
                #expect(refused.status == 400 && refused.errorCode == "INVALID_DECISION_FOR_KIND")

                let reply = try await harness.approve(job, ["approvalId": approvalId, "decision": decision, "declineReason": "not now"])
                #expect(reply.json["status"] as? String == "submitted")
                try await harness.wait(job, for: "DONE")
                let after = try await harness.events(job)
                let expected = decision == "accept"
                    ? ["approval.resolved", "job.state", "item.fileChange.outputDelta", "item.completed", "item.started",
                       "item.agentMessage.delta", "item.completed", "turn.completed", "job.state", "job.finished"]
                    : ["approval.resolved", "job.state", "item.completed", "item.started",
                       "item.agentMessage.delta", "item.completed", "turn.completed", "job.state", "job.finished"]
                #expect(tail(after) == expected)
                #expect(after.cwPayload("approval.resolved")?["declineReason"] as? String == "not now")
                let fileDone = after.last {
                    $0["type"] as? String == "item.completed"
                        && (($0["payload"] as? [String: Any])?["item"] as? [String: Any])?["type"] as? String == "fileChange"
                }
                let finalItem = (fileDone?["payload"] as? [String: Any])?["item"] as? [String: Any]
                #expect(finalItem?["status"] as? String == (decision == "accept" ? "completed" : "declined"))
            }
        }
    }

    @Test("approve errors: INVALID_APPROVAL_ID, INVALID_DECISION, APPROVAL_NOT_FOUND, INVALID_EXEC_POLICY_AMENDMENT")
    func approveErrors() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "run it")
            try await harness.wait(job, for: "WAITING_APPROVAL")
            let approvalId = try await harness.approvalId(job)

            let cases: [([String: Any], Int, String)] = [
                (["decision": "accept"], 400, "INVALID_APPROVAL_ID"),
                (["approvalId": approvalId, "decision": "yes"], 400, "INVALID_DECISION"),
                (["approvalId": approvalId, "decision": "acceptForSession"], 400, "INVALID_DECISION"),
                (["approvalId": "appr_ffffffffffffffff", "decision": "accept"], 404, "APPROVAL_NOT_FOUND"),
                (["approvalId": approvalId, "decision": "accept_with_execpolicy_amendment"], 400, "INVALID_EXEC_POLICY_AMENDMENT"),
                (["approvalId": approvalId, "decision": "accept_with_execpolicy_amendment", "execPolicyAmendment": []],
                 400, "INVALID_EXEC_POLICY_AMENDMENT"),
                (["approvalId": approvalId, "decision": "accept_with_execpolicy_amendment", "execPolicyAmendment": ["git", ""]],
                 400, "INVALID_EXEC_POLICY_AMENDMENT"),
            ]
            for (body, status, code) in cases {
                let reply = try await harness.approve(job, body)
                #expect(reply.status == status && reply.errorCode == code, "\(body)")
            }
            // An approval of another job is not found on this one.
            let otherThread = try await harness.createThread()
            let other = try await harness.startTurn(otherThread, "run it")
            try await harness.wait(other, for: "WAITING_APPROVAL")
            let foreign = try await harness.approve(other, ["approvalId": approvalId, "decision": "accept"])
            #expect(foreign.status == 404 && foreign.errorCode == "APPROVAL_NOT_FOUND")
            // snake_case aliases work.
            let snake = try await harness.approve(job, [
                "approval_id": approvalId, "decision": "accept_with_execpolicy_amendment", "exec_policy_amendment": ["swift", "build"],
            ])
            #expect(snake.json["status"] as? String == "submitted")
        }
    }

    @Test("cancel while waiting: snapshot unchanged, then interrupted → CANCELLED → finished; approval stays submittable")
    func cancelWhileWaiting() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "run the tests")
            try await harness.wait(job, for: "WAITING_APPROVAL")
            let approvalId = try await harness.approvalId(job)

            let cancel = try await harness.request("POST", "/v1/jobs/\(job)/cancel")
            #expect(cancel.status == 200)
            #expect(cancel.json["state"] as? String == "WAITING_APPROVAL")
            let snapshot = try await harness.wait(job, for: "CANCELLED")
            #expect(snapshot["pendingApprovalCount"] as? Int == 1)
            #expect(snapshot["terminalAt"] is String)

            var events = try await harness.events(job)
            #expect(Array(events.cwTypes.suffix(4)) == ["approval.required", "turn.completed", "job.state", "job.finished"])
            let turn = try #require(events.cwPayload("turn.completed")?["turn"] as? [String: Any])
            #expect(turn["status"] as? String == "interrupted")
            #expect(events.cwPayload("job.finished")?["state"] as? String == "CANCELLED")

            // Approving afterwards is still "submitted", and its event lands after job.finished.
            let late = try await harness.approve(job, ["approvalId": approvalId, "decision": "accept"])
            #expect(late.json["status"] as? String == "submitted")
            events = try await harness.events(job)
            #expect(Array(events.cwTypes.suffix(2)) == ["job.finished", "approval.resolved"])
            #expect(try await harness.snapshot(job)["state"] as? String == "CANCELLED")

            // Cancelling a terminal job returns it unchanged.
            let again = try await harness.request("POST", "/v1/jobs/\(job)/cancel")
            #expect(again.json["state"] as? String == "CANCELLED")
            let missing = try await harness.request("POST", "/v1/jobs/job_0000000000000000/cancel")
            #expect(missing.status == 404 && missing.errorCode == "JOB_NOT_FOUND")
        }
    }

    @Test("cancel while streaming: turn.completed interrupted, CANCELLED")
    func cancelWhileRunning() async throws {
        let options = CodexWorkerSimulator.Options(pingInterval: .milliseconds(100), pacing: .milliseconds(5))
        try await CWHarness.with(options) { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "long 2000")
            try await harness.wait(job, for: "RUNNING")
            let cancel = try await harness.request("POST", "/v1/jobs/\(job)/cancel")
            #expect(["QUEUED", "RUNNING"].contains(cancel.json["state"] as? String ?? ""))
            try await harness.wait(job, for: "CANCELLED")
            let events = try await harness.events(job)
            #expect(Array(events.cwTypes.suffix(3)) == ["turn.completed", "job.state", "job.finished"])
            #expect((events.cwPayload("turn.completed")?["turn"] as? [String: Any])?["status"] as? String == "interrupted")
            // The thread is free again.
            let next = try await harness.startTurn(thread, "hello")
            try await harness.wait(next, for: "DONE")
        }
    }

    @Test("a failed turn: error event, turn.completed failed with error, FAILED with errorMessage")
    func failedTurn() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "please fail")
            let snapshot = try await harness.wait(job, for: "FAILED")
            let message = try #require(snapshot["errorMessage"] as? String)
            let events = try await harness.events(job)
            #expect(Array(events.cwTypes.suffix(4)) == ["error", "turn.completed", "job.state", "job.finished"])
            let error = try #require(events.cwPayload("error"))
            #expect((error["error"] as? [String: Any])?["message"] as? String == message)
            #expect(error["willRetry"] as? Bool == false)
            #expect(error["turnId"] as? String == snapshot["turnId"] as? String)
            let turn = try #require(events.cwPayload("turn.completed")?["turn"] as? [String: Any])
            #expect(turn["status"] as? String == "failed")
            #expect((turn["error"] as? [String: Any])?["message"] as? String == message)
            #expect(events.cwPayload("job.finished")?["errorMessage"] as? String == message)
            #expect(events.cwPayload("job.finished")?["state"] as? String == "FAILED")
        }
    }

    @Test("THREAD_HAS_ACTIVE_JOB while a job waits; INVALID_INPUT; unknown thread is 500")
    func turnConflicts() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "run the build")
            try await harness.wait(job, for: "WAITING_APPROVAL")
            let busy = try await harness.request("POST", "/v1/threads/\(thread)/turns", json: ["text": "hello"])
            #expect(busy.status == 409 && busy.errorCode == "THREAD_HAS_ACTIVE_JOB")

            for body: [String: Any] in [[:], ["text": ""], ["input": []]] {
                let invalid = try await harness.request("POST", "/v1/threads/\(thread)/turns", json: body)
                #expect(invalid.status == 400 && invalid.errorCode == "INVALID_INPUT", "\(body)")
            }
            let unknown = try await harness.request("POST", "/v1/threads/00000000-0000-7000-8000-000000000000/turns", json: ["text": "hi"])
            #expect(unknown.status == 500 && unknown.errorCode == "INTERNAL_ERROR")

            // `input` is used as given.
            let other = try await harness.createThread()
            let inputJob = try await harness.request("POST", "/v1/threads/\(other)/turns", json: [
                "input": [["type": "text", "text": "hello via input"]],
            ])
            #expect(inputJob.status == 202)
            #expect(inputJob.json["state"] as? String == "QUEUED")
            #expect(inputJob.json["threadId"] as? String == other)
            #expect((inputJob.json["jobId"] as? String)?.count == 20)
            #expect(inputJob.json.keys.sorted() == [
                "createdAt", "errorMessage", "jobId", "pendingApprovalCount", "state", "terminalAt", "threadId", "turnId", "updatedAt",
            ])
        }
    }
}
