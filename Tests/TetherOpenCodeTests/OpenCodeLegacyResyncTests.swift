import Testing
import TetherCore
@testable import TetherOpenCode
import TetherStreaming

/// Resync against a legacy server, which lists no pending permissions: the mapper keeps what the
/// stream announced for as long as the server's messages show the tool still waiting.
@Suite struct OpenCodeLegacyResyncTests {
    let session = "ses_fe1d0c3a2b11Qm8xT2aLk9pQ1z"

    /// The legacy transcript up to its `permission.updated` (the permission still pending).
    func mapperWaitingOnPermission() throws -> OpenCodeEventMapper {
        var mapper = OpenCodeEventMapper()
        let frames = try Transcript.frames("legacy-permission-turn")
        let asked = try #require(frames.firstIndex { $0["type"]?.string == "permission.updated" })
        let events = try Transcript.map(Array(frames[...asked]), into: &mapper)
        let approval = try #require(events.of(.approvalRequested).first)
        #expect(approval.data["tool"] == ["messageID": "msg_a002", "callID": "call_1"])
        #expect(mapper.pendingApprovals.count == 1)
        return mapper
    }

    /// What `GET /session/{id}/message` shows: the user message, then the assistant's with the
    /// bash tool part in `status`.
    func messages(toolStatus: String, assistantCompleted: Bool = false) -> [JSONValue] {
        var assistantTime: JSONObject = ["created": 1_767_225_700_100]
        if assistantCompleted { assistantTime["completed"] = 1_767_225_702_000 }
        return [
            ["info": ["id": "msg_a001", "sessionID": .string(session), "role": "user"],
             "parts": [["id": "prt_a001", "sessionID": .string(session), "messageID": "msg_a001", "type": "text",
                        "text": "Clean the build dir and say done"]]],
            ["info": ["id": "msg_a002", "sessionID": .string(session), "role": "assistant", "parentID": "msg_a001",
                      "time": .object(assistantTime)],
             "parts": [["id": "prt_a004", "sessionID": .string(session), "messageID": "msg_a002", "type": "tool",
                        "callID": "call_1", "tool": "bash",
                        "state": ["status": .string(toolStatus), "input": ["command": "rm -rf build"]]]]],
        ]
    }

    @Test func aPermissionWhoseToolStillWaitsStaysPending() throws {
        var mapper = try mapperWaitingOnPermission()
        mapper.reconcileStreamedPermissions(messages: [session: messages(toolStatus: "running")], busy: [session], sessions: nil)
        #expect(mapper.pendingApprovals.keys.sorted() == ["per_b001"])
    }

    @Test(arguments: ["completed", "error"])
    func aPermissionWhoseToolFinishedWasAnsweredMeanwhile(_ status: String) throws {
        var mapper = try mapperWaitingOnPermission()
        mapper.reconcileStreamedPermissions(messages: [session: messages(toolStatus: status)], busy: [session], sessions: nil)
        #expect(mapper.pendingApprovals.isEmpty)
    }

    @Test func aPermissionOfASessionNoLongerBusyIsForgotten() throws {
        var mapper = try mapperWaitingOnPermission()
        mapper.reconcileStreamedPermissions(messages: [session: messages(toolStatus: "running")], busy: [], sessions: nil)
        #expect(mapper.pendingApprovals.isEmpty)
    }

    @Test func permissionsOfOtherSessionsAreLeftAloneWhenTheStreamIsScoped() throws {
        var mapper = try mapperWaitingOnPermission()
        mapper.reconcileStreamedPermissions(messages: [:], busy: [], sessions: ["ses_other"])
        #expect(mapper.pendingApprovals.count == 1)
    }

    @Test func withoutAStatusListTheLastTurnRunsUntilItsAnswerCompletes() {
        #expect(OpenCodeEventMapper.lastTurnIsRunning(messages(toolStatus: "running")))
        #expect(!OpenCodeEventMapper.lastTurnIsRunning(messages(toolStatus: "completed", assistantCompleted: true)))
        #expect(OpenCodeEventMapper.lastTurnIsRunning(Array(messages(toolStatus: "running").prefix(1))))
        #expect(!OpenCodeEventMapper.lastTurnIsRunning([]))
    }
}
