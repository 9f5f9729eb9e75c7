import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// Ids as a person types them: any start of a session or approval id that matches one, `last`
/// for the newest pending approval, and the matching ids listed when a start matches several.
@Suite(.serialized) struct ShortIDCLITests {
    let env = ["OC_PW": "secret"]

    /// The shortest start of `id` that no other of `ids` has.
    func shortest(_ id: String, among ids: [String]) -> String {
        for length in 1...id.count {
            let prefix = String(id.prefix(length))
            if ids.filter({ $0.hasPrefix(prefix) }).count == 1 { return prefix }
        }
        return id
    }

    /// Two sessions' permissions pending (their turns waiting): ids for both.
    func twoPendingApprovals(_ global: [String]) async throws -> (sessions: [String], approvals: [String], sends: [TetherProcess]) {
        var sessions: [String] = []
        var approvals: [String] = []
        var sends: [TetherProcess] = []
        for _ in 0..<2 {
            let session = try await TetherProcess.createSession(global, environment: env)
            let send = try TetherProcess(["send", session, OpenCodeCLITests.prompt, "--follow"] + global, environment: env)
            approvals.append(try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string))
            sessions.append(session)
            sends.append(send)
        }
        return (sessions, approvals, sends)
    }

    @Test func aSessionPrefixPicksTheSessionAndAnAmbiguousOneListsTheMatches() async throws {
        try await withSimulatedOpenCode { global in
            let ids = [try await TetherProcess.createSession(global, environment: env),
                       try await TetherProcess.createSession(global, environment: env)]
            let common = String(zip(ids[0], ids[1]).prefix { $0 == $1 }.map(\.0))
            #expect(!common.isEmpty)

            let ambiguous = try await TetherProcess.run(["sessions", "show", common] + global, environment: env)
            #expect(ambiguous.status == 64, "\(ambiguous.stderr)")
            #expect(ambiguous.stderr.contains("\"\(common)\" is the start of 2 session ids"), "\(ambiguous.stderr)")
            #expect(ids.allSatisfy { ambiguous.stderr.contains($0) }, "\(ambiguous.stderr)")

            let short = shortest(ids[1], among: ids)
            let shown = try await TetherProcess.run(["sessions", "show", short] + global, environment: env)
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(try shown.events().first?.session == ids[1])

            // The same start sends to that session.
            let sent = try await TetherProcess.run(["send", short, "hello"] + global, environment: env)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(try sent.events().first?.session == ids[1])
        }
    }

    @Test func anApprovalByItsStartOrLast() async throws {
        try await withSimulatedOpenCode { global in
            let (_, approvals, sends) = try await twoPendingApprovals(global)
            let common = String(zip(approvals[0], approvals[1]).prefix { $0 == $1 }.map(\.0))
            let ambiguous = try await TetherProcess.run(["approve", common] + global, environment: env)
            #expect(ambiguous.status == 64, "\(ambiguous.stderr)")
            #expect(approvals.allSatisfy { ambiguous.stderr.contains($0) }, "\(ambiguous.stderr)")

            // `last`: the newest pending, the second one asked.
            let last = try await TetherProcess.run(["approve", "last"] + global, environment: env)
            #expect(last.status == 0, "\(last.stderr)")
            #expect(try last.events().first?.data["id"]?.string == approvals[1])
            #expect(try await sends[1].finish().status == 0)

            // A start of the other (unambiguous now that only one is pending).
            let byStart = try await TetherProcess.run(["approve", common, "--decision", "decline"] + global, environment: env)
            #expect(byStart.status == 0, "\(byStart.stderr)")
            #expect(try byStart.events().first?.data["id"]?.string == approvals[0])
            _ = try await sends[0].finish()

            let none = try await TetherProcess.run(["approve", "last"] + global, environment: env)
            #expect(none.status == 1, "\(none.stderr)")
            #expect(none.stderr.contains("no approval is pending"), "\(none.stderr)")
        }
    }
}
