import Testing
import TetherCore
@testable import TetherGatewayClient

/// How a `gateway` profile's ids and events relate to the remote gateway's.
@Suite struct GatewayRemoteScopeTests {
    let all = GatewayRemoteScope(local: "hub", remote: nil)
    let one = GatewayRemoteScope(local: "hub", remote: "work")

    @Test(arguments: [
        ("work", "ses_1"), ("work", "ses_1~per_2"), ("a~b", "ses_1"), ("50%", "x%7Ey"), ("work", "~"), ("w", "a~~b"),
    ])
    func everyIdRoundTripsThroughItsLocalForm(profile: String, id: String) throws {
        let local = all.localID(id, profile: profile)
        let resolved = try all.resolve(local, what: "session id")
        #expect(resolved.profile == profile && resolved.id == id, "\(local)")
    }

    @Test func aRemoteIdKeepsItsOwnSeparatorsReadably() {
        #expect(all.localID("ses_1~per_2", profile: "work") == "work~ses_1~per_2")
        #expect(all.localID("ses_1", profile: "a~b") == "a%7Eb~ses_1")
    }

    @Test(arguments: ["ses_1", "~ses_1", "work~", ""])
    func anIdWithoutItsProfileIsAUsageError(id: String) {
        #expect(throws: TetherError.self) { try all.resolve(id, what: "session id") }
        do {
            _ = try all.resolve(id, what: "session id")
        } catch {
            #expect(error.code == .usage && error.message.contains("PROFILE~ID"))
        }
    }

    @Test func withARemoteProfileIdsPassAsTheyAre() throws {
        #expect(one.localID("ses_1~per_2", profile: "work") == "ses_1~per_2")
        let resolved = try one.resolve("ses_1~per_2", what: "approval id")
        #expect(resolved.profile == "work" && resolved.id == "ses_1~per_2")
    }

    @Test func aPathNeverLeavesItsRoute() throws {
        let path = try all.path("work~../x", what: "session id") { "/v1/profiles/\($0)/sessions/\($1)" }
        #expect(path == "/v1/profiles/work/sessions/..%2Fx")
        #expect(throws: TetherError.self) { try all.path("work~..", what: "session id") { "/\($0)/\($1)" } }
        #expect(throws: TetherError.self) { try all.path("..~ses", what: "session id") { "/\($0)/\($1)" } }
    }

    @Test func anEventShowsItsOriginAndLocalIdsAndTheSeqAsItsCursor() {
        var requested = Event.approvalRequested(Approval(id: "ses_1~per_2", session: "ses_1", kind: .command, options: [.accept], risk: .high),
                                                cursor: "remote-cursor")
        requested.session = "ses_1"
        requested.profile = "work"
        requested.backend = .openCode
        let local = all.localEvent(requested, seq: "42")
        #expect(local.profile == "hub/work" && local.backend == .openCode && local.cursor == "42")
        #expect(local.session == "work~ses_1")
        #expect(local.data["id"] == "work~ses_1~per_2" && local.data["session"] == "work~ses_1")

        let kept = one.localEvent(requested, seq: nil)
        #expect(kept.profile == "hub/work" && kept.session == "ses_1" && kept.data["id"] == "ses_1~per_2" && kept.cursor == "remote-cursor")
    }

    @Test func anApprovalReadsBackFromItsEventData() throws {
        let approval = Approval(id: "a", session: "s", turn: "t", kind: .question, title: "Which?", patterns: ["p"],
                                options: [.accept, .decline], risk: .low, extra: ["questions": .array([.string("q")])])
        guard case .object(let data) = approval.json else { Issue.record("not an object"); return }
        #expect(Approval(json: data) == approval)
        #expect(Approval(json: ["id": "a"]) == nil)
        #expect(Approval(json: ["id": "a", "kind": "nope"]) == nil)
    }

    @Test func aSessionReadsBackFromItsJSON() {
        let session = Session(id: "s", title: "t", directory: "/d", createdAt: 1, updatedAt: 2, status: .busy, archived: false)
        #expect(Session(json: session.json) == session)
        #expect(Session(json: ["title": "no id"]) == nil)
    }
}
