import TetherCodexProtocol
import Foundation
import Testing
import TetherCore
@testable import TetherCodexMonitor

/// The wire rules that break a naive client: raw results, auth outcomes, id and decision shapes.
@Suite struct CodexMonitorRulesTests {
    // MARK: Unwrapping raw app-server results

    @Test func aRawResultIsUnwrapped() throws {
        let daemonResult = json(#"{"id":3,"result":{"thread":{"id":"thr_a1","turns":[]}}}"#)
        #expect(try CodexMonitorResult.unwrap(daemonResult).get() == json(#"{"thread":{"id":"thr_a1","turns":[]}}"#))
        let emptyInner = json(#"{"id":5,"result":{}}"#)
        #expect(try CodexMonitorResult.unwrap(emptyInner).get() == [:])
    }

    @Test func anInnerErrorIsAFailureEvenThoughTheDaemonSaidSuccess() {
        let result = CodexMonitorResult.unwrap(json(#"{"id":4,"error":{"code":-32600,"message":"thread not found"}}"#))
        #expect(result == .failure(.init(message: "thread not found", code: -32600)))
        if case .failure(let error) = result { #expect(error.isNotFound) }
        // `error` wins even next to a `result`.
        #expect(CodexMonitorResult.unwrap(json(#"{"id":4,"result":{},"error":{"message":"boom"}}"#)) == .failure(.init(message: "boom", code: nil)))
    }

    @Test func resultsThatAreNotRawPassThrough() throws {
        #expect(try CodexMonitorResult.unwrap(json(#"{"ok":true}"#)).get() == ["ok": true])
        #expect(try CodexMonitorResult.unwrap(json(#"[{"id":"ws-1"}]"#)).get() == [["id": "ws-1"]])
        #expect(try CodexMonitorResult.unwrap(.bool(true)).get() == true)
        #expect(try CodexMonitorResult.unwrap(json(#"{"error":null,"data":[]}"#)).get() == json(#"{"error":null,"data":[]}"#))
    }

    // MARK: Auth outcomes

    @Test func authOutcomes() {
        typealias A = CodexMonitorAuth
        #expect(A.request(token: "s3cret").method == "auth")
        #expect(A.request(token: "s3cret").params == ["token": "s3cret"])
        #expect(A.request(token: nil).method == "ping")

        #expect(A.outcome(token: "t", answer: .success(["ok": true])) == .authenticated)
        #expect(A.outcome(token: "t", answer: .failure(.init(message: "invalid token"))) == .refused)
        // A daemon without auth (or a connection already in) does not know `auth`: that is fine.
        #expect(A.outcome(token: "t", answer: .failure(.init(message: "unknown method: auth"))) == .open)
        #expect(A.outcome(token: nil, answer: .success(["ok": true])) == .open)
        #expect(A.outcome(token: nil, answer: .failure(.init(message: "unauthorized"))) == .tokenRequired)
        #expect(A.outcome(token: nil, answer: .failure(.init(message: "unknown method: ping"))) == .open)
        #expect(A.outcome(token: "t", answer: .failure(.init(message: "weird"))) == .failed("weird"))
    }

    @Test func refusedCredentialsExit77NamingTheProfileWithoutTheToken() throws {
        let refused = try #require(CodexMonitorAuth.error(for: .refused, endpoint: "127.0.0.1:4732", profile: "monitor"))
        #expect(refused.code == .authentication)
        #expect(refused.exitCode == 77)
        #expect(refused.message.contains("profile monitor"))
        #expect(refused.hint?.contains("profiles.monitor.token") == true)
        let missing = try #require(CodexMonitorAuth.error(for: .tokenRequired, endpoint: "127.0.0.1:4732", profile: "monitor"))
        #expect(missing.exitCode == 77)
        #expect(missing.message.contains("has none"))
        #expect(CodexMonitorAuth.error(for: .open, endpoint: "x", profile: "p") == nil)
    }

    @Test func authAgainstScriptedDaemons() async throws {
        // Wrong token: exit 77, named profile, and the secret never shows.
        let wrong = FakeDaemon { request, daemon in _ = daemon.answerBasics(request, token: "s3cret") }
        let refused = await #expect(throws: TetherError.self) {
            _ = try await CodexMonitorBackend.test([wrong], token: "not-it").check()
        }
        #expect(refused?.exitCode == 77)
        #expect(refused?.message.contains("monitor") == true)
        #expect(refused.map { !$0.description.contains("not-it") } == true)

        // A daemon run with --insecure-no-auth answers `unknown method: auth`: usable.
        let open = FakeDaemon { request, daemon in
            if request["method"] == "daemon_info" { daemon.respond(request, #"{"name":"codex-monitor-daemon","version":"0.7.1","pid":1,"mode":"tcp"}"#) }
            else { _ = daemon.answerBasics(request, token: nil) }
        }
        let report = try await CodexMonitorBackend.test([open], token: "s3cret").check()
        #expect(report.authenticated == false)
        #expect(report.details["auth_enabled"] == false)
        #expect(report.version == "0.7.1")
        #expect(report.details["workspaces"]?[0]?["id"] == "ws-1")

        // No token, but the daemon wants one: `ping` is refused with `unauthorized`.
        let guarded = FakeDaemon { request, daemon in
            if request["method"] == "ping" { daemon.fail(request, "unauthorized") } else { _ = daemon.answerBasics(request) }
        }
        let required = await #expect(throws: TetherError.self) { _ = try await CodexMonitorBackend.test([guarded], token: nil).check() }
        #expect(required?.exitCode == 77)
    }

    // MARK: Ids and decisions

    @Test func approvalIdsRoundTripAndKeepTheRequestIdType() throws {
        let number = CodexApprovalID(scope: "ws~1", thread: "thr_1", request: 0, kind: .command, turn: "turn~7", item: "call_1")
        #expect(number.string == "ws%7E1~thr_1~0~cmd~turn%7E7~call_1")
        #expect(CodexApprovalID(monitorID: number.string) == number)
        let text = CodexApprovalID(scope: "ws-1", thread: "thr_1", request: "0", kind: .fileChange, turn: nil, item: "call_2")
        #expect(text.string == "ws-1~thr_1~s:0~file")  // no turn: no item either (the parts are positional)
        #expect(CodexApprovalID(monitorID: text.string)?.request == "0")
        #expect(CodexApprovalID(monitorID: text.string)?.turn == nil)
        // From older Tether: four and five parts.
        #expect(CodexApprovalID(monitorID: "ws-1~thr_1~0~cmd~turn_1")?.turn == "turn_1")
        #expect(CodexApprovalID(monitorID: "ws-1~thr_1~0~cmd~turn_1")?.item == nil)
        // An empty turn is no turn.
        #expect(CodexApprovalID(scope: "ws-1", thread: "thr_1", request: 1, kind: .command, turn: "", item: nil).string == "ws-1~thr_1~1~cmd")
        #expect(CodexApprovalID(monitorID: "ws-1~thr_1~0") == nil)
        #expect(CodexApprovalID(monitorID: "ws-1~thr_1~0~nope") == nil)
        #expect(CodexApprovalID(monitorID: "ws-1~thr_1~0~cmd~") == nil)
        #expect(CodexApprovalID(monitorID: "ws-1~thr_1~0~cmd~turn_1~it_1~x") == nil)
        #expect(CodexMonitorSessionID.parse("ws-1~thr_1")! == ("ws-1", "thr_1"))
    }

    @Test func decisionShapes() throws {
        func result(_ decision: Decision, _ amendment: [String] = [], kind: CodexApprovalID.Kind = .command) throws -> String {
            try CodexDecision.result(for: ApprovalAnswer(decision: decision, amendment: amendment), kind: kind).serialized
        }
        #expect(try result(.accept) == #"{"decision":"accept"}"#)
        #expect(try result(.acceptForSession) == #"{"decision":"acceptForSession"}"#)
        #expect(try result(.acceptWithAmendment, ["npm", "test"])
                == #"{"decision":{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["npm","test"]}}}"#)
        #expect(try result(.decline) == #"{"decision":"decline"}"#)
        #expect(try result(.cancel) == #"{"decision":"cancel"}"#)
        #expect(try result(.acceptForSession, kind: .fileChange) == #"{"decision":"acceptForSession"}"#)

        #expect(throws: TetherError.self) { try result(.acceptWithAmendment) }  // no argv
        #expect(throws: TetherError.self) { try result(.acceptWithAmendment, ["x"], kind: .fileChange) }
        let unsupported = #expect(throws: TetherError.self) { try result(.accept, kind: .permissions) }
        #expect(unsupported?.code == .unsupported)

        #expect(CodexDecision.decision(fromWire: "acceptForSession") == .acceptForSession)
        #expect(CodexDecision.decision(fromWire: json(#"{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["ls"]}}"#)) == .acceptWithAmendment)
        #expect(CodexDecision.decision(fromWire: json(#"{"applyNetworkPolicyAmendment":{}}"#)) == nil)
    }

    @Test func threadsAreFilteredByCwdAndMappedToSessions() throws {
        let thread = json(#"{"id":"thr_0","preview":"fix tests","cwd":"/srv/demo/","createdAt":1767000000,"updatedAt":1767000100,"status":{"type":"notLoaded"}}"#)
        #expect(CodexMonitorThread.belongs(thread, toPath: "/srv/demo"))
        #expect(!CodexMonitorThread.belongs(thread, toPath: "/srv/demo2"))
        #expect(!CodexMonitorThread.belongs(json(#"{"id":"x"}"#), toPath: "/srv/demo"))
        let session = try #require(CodexThread.session(scope: "ws-1", thread: thread))
        #expect(session.id == "ws-1~thr_0")
        #expect(session.title == "fix tests")
        #expect(session.createdAt == 1_767_000_000_000)
        #expect(session.status == .idle)
        #expect(CodexThread.status(json(#"{"type":"active","activeFlags":["waitingOnApproval"]}"#)) == .waitingApproval)
        #expect(CodexThread.status(json(#"{"type":"systemError"}"#)) == .error)
    }
}
