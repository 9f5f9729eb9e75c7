import TetherCore
import TetherStreaming

extension OpenCodeBackend {
    /// A question (`question.asked`) is answered with its chosen labels, one list per question
    /// (`POST /question/{id}/reply {answers}`), or dismissed (`POST /question/{id}/reject`) by
    /// declining or cancelling. Accepting without answers cannot be sent: say what would be.
    func answerQuestion(id: String, session: String?, request: String, answer: ApprovalAnswer) async throws -> Event {
        let resolution: String
        switch answer.decision {
        case .decline, .cancel:
            guard answer.answers.isEmpty else {
                throw TetherError(.usage, "--answer goes with accepting a question, not with --decision \(answer.decision.rawValue)")
            }
            try await settle(id: id) { try await client.post("/question/\(Self.escape(request))/reject", body: nil) }
            resolution = "rejected"
        case .accept where !answer.answers.isEmpty:
            let answers = JSONValue.array(answer.answers.map { .array($0.map(JSONValue.string)) })
            try await settle(id: id) { try await client.post("/question/\(Self.escape(request))/reply", body: ["answers": answers]) }
            resolution = "answered"
        default:
            throw TetherError(.usage, "approval \(id) is a question: it is answered with its choices, not a decision",
                              hint: "tether approve \(id) --answer CHOICE (`tether approvals` shows the choices), or --decision decline to dismiss it")
        }
        if answer.decision == .cancel, let session {
            try await abort(session: session, turn: nil)
        }
        return .approvalResolved(id: id, session: session, turn: nil, decision: resolution)
    }

    private func settle(id: String, _ post: () async throws -> JSONValue) async throws {
        do {
            _ = try await post()
        } catch let error as TetherError where error.code == .notFound {
            throw TetherError(.notFound, "question \(id) is not pending on OpenCode (answered already, or its turn ended)",
                              hint: "`tether approvals` lists what is pending")
        }
    }
}
