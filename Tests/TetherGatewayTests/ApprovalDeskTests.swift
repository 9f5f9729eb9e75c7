import Foundation
import Logging
import Synchronization
import Testing
import TetherCore
@testable import TetherGateway

/// A backend whose answers take a while, as a real one's do over the network.
final class SlowApprovalBackend: Backend, Sendable {
    let answers = Mutex<[Decision]>([])
    let delay: Duration
    init(delay: Duration) { self.delay = delay }

    var kind: BackendKind { .codexWorker }
    var capabilities: BackendCapabilities { [.approvals] }
    func check() async throws -> CheckReport { CheckReport(endpoint: "test", reachable: true, authenticated: true) }
    func listSessions(_ request: SessionListRequest) async throws -> [Session] { [] }
    func createSession(_ request: SessionCreateRequest) async throws -> Session { Session(id: "s1") }
    func session(id: String) async throws -> Session { Session(id: id) }
    func history(session: String, limit: Int?) async throws -> [Event] { [] }
    func send(_ request: SendRequest) async throws -> SendReceipt { SendReceipt(session: request.session, turn: "t1") }
    func events(_ request: EventsRequest) -> EventStream { EventStream([]) }
    func pendingApprovals(session: String?) async throws -> [Approval] { [] }
    func approve(id: String, answer: ApprovalAnswer) async throws -> Event {
        answers.withLock { $0.append(answer.decision) }
        try await Task.sleep(for: delay)
        return .approvalResolved(id: id, session: "s1", turn: "t1", decision: answer.decision.rawValue)
    }
    func abort(session: String, turn: String?) async throws {}
}

@Suite struct ApprovalDeskTests {
    /// Two clients answer the same approval at once (a phone and a laptop): the backend hears
    /// one answer; the other client gets the first's line when it agrees, 409 when it does not.
    @Test(arguments: [Decision.accept, .decline]) func racingAnswersReachTheBackendOnce(second: Decision) async throws {
        let backend = SlowApprovalBackend(delay: .milliseconds(200))
        let profile = ServedProfile(name: "home", backend: backend)
        let desk = ApprovalDesk(journal: try EventStreamTests.journal(), logger: Logger(label: "test"))
        async let first = desk.answer(ApprovalAnswer(decision: .accept), approval: "a1", profile: profile)
        try await Task.sleep(for: .milliseconds(20))  // the first is with the backend
        let other = await Result(catching: { try await desk.answer(ApprovalAnswer(decision: second), approval: "a1", profile: profile) })
        let line = try await first
        #expect(backend.answers.withLock { $0 } == [.accept])
        switch (second, other) {
        case (.accept, .success(let repeated)):
            #expect(repeated == line)
        case (.decline, .failure(let problem as ProblemDetails)):
            #expect(problem.kind.code == "conflict", "\(problem)")
        default:
            Issue.record("the second answer (\(second)) got \(other)")
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
