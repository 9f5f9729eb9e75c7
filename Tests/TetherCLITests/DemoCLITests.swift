import Testing
@testable import TetherTestSupport
import TetherCore

/// `tether demo`, the embedded default, as `make demo` runs it (piped: JSON Lines).
@Suite struct DemoCLITests {
    @Test func theDemoRunsEveryScriptedSessionToCompletion() async throws {
        let result = try await TetherProcess.run(["demo", "--pacing", "0"], timeout: .seconds(90))
        #expect(result.status == 0, "\(result.stderr)")
        let events = try result.events()
        let completed = events.filter { $0.type == .turnCompleted }
        #expect(Set(completed.compactMap(\.backend)) == [.openCode, .codexWorker, .codex, .codexMonitor])
        #expect(completed.allSatisfy { $0.data["status"] == "completed" })
        // OpenCode twice: a 1.x server, then a 2.x one.
        #expect(events.filter { $0.type == .approvalRequested }.count == 5)
        #expect(events.filter { $0.type == .approvalResolved }.count >= 5)
        #expect(Set(completed.compactMap(\.profile)).isSuperset(of: ["demo-opencode", "demo-opencode-2"]))
        // Each scene answers its approval with accept; every backend's stream says so, none "unknown".
        for backend in [BackendKind.openCode, .codexWorker, .codex, .codexMonitor] {
            let decisions = events.filter { $0.type == .approvalResolved && $0.backend == backend }.map { $0.data["decision"] }
            #expect(decisions.contains("accept"), "\(backend): \(decisions)")
            #expect(!decisions.contains("unknown"), "\(backend): \(decisions)")
        }
        #expect(result.stderr.contains("demo: done"))
        #expect(events.contains { $0.type == .notificationReceived && $0.data["title"] == "Turn finished" })
    }
}
