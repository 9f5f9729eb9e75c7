import Logging
import TetherCore

/// Answers approvals through the API, once: the first answer is sent to the backend and recorded
/// in the log's database; the same decision again gets the same answer (200), another decision
/// gets 409 naming the first. One answer at a time per approval, so two racing clients cannot
/// both reach the backend: the actor alone does not make it so, since another answer runs
/// while one awaits the backend.
actor ApprovalDesk {
    let journal: EventJournal
    let logger: Logger
    /// Answers on their way to the backend, by profile and approval id.
    private var answering: [ApprovalKey: Task<String, any Error>] = [:]

    private struct ApprovalKey: Hashable {
        var profile: String
        var id: String
    }

    init(journal: EventJournal, logger: Logger) {
        self.journal = journal
        self.logger = logger
    }

    /// The `approval.resolved` line for the answer.
    func answer(_ answer: ApprovalAnswer, approval id: String, profile: ServedProfile) async throws -> String {
        let key = ApprovalKey(profile: profile.name, id: id)
        // Another answer to it is with the backend: this one is judged by its outcome.
        while let pending = answering[key] { _ = try? await pending.value }
        if let recorded = try journal.log.decision(profile: profile.name, approval: id) {
            return try Self.repeatAnswer(answer, recorded: recorded, approval: id)
        }
        let sending = Task {
            // Gone from `answering` before its outcome is: a waiter woken by it finds it gone.
            defer { self.answering[key] = nil }
            return try await self.send(answer, approval: id, profile: profile)
        }
        answering[key] = sending
        return try await sending.value
    }

    /// Sends the first answer to the backend and records it.
    private func send(_ answer: ApprovalAnswer, approval id: String, profile: ServedProfile) async throws -> String {
        let log = journal.log
        let resolved: Event
        do {
            resolved = profile.stamp(try await profile.backend.approve(id: id, answer: answer))
        } catch let error as TetherError {
            // Answered meanwhile by someone else, and the backend's resolved event already logged?
            if let recorded = try log.decision(profile: profile.name, approval: id) {
                return try Self.repeatAnswer(answer, recorded: recorded, approval: id)
            }
            let requested = try log.wasRequested(profile: profile.name, approval: id)
            if error.code == .notFound || (error.code == .usage && !requested) {
                throw ProblemDetails(.notFound, "no pending approval \(id) in profile \(profile.name)",
                                     detail: "GET /v1/approvals lists the pending ones; \(error.message)")
            }
            throw ProblemDetails(error, doing: "answering approval \(id)")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // A transport failure: the backend may or may not have the answer; asking again is safe.
            throw ProblemDetails(.unavailable, "answering approval \(id) failed", detail: "\(error)")
        }
        var codec = EventCodec()
        var bytes = codec.encode(resolved)
        bytes.removeLast()
        let line = String(decoding: bytes, as: UTF8.self)
        let recorded = try log.recordDecision(profile: profile.name, approval: id, decision: answer.decision.rawValue, line: line)
        do {
            try journal.record(resolved)
        } catch {
            logger.error("cannot append an approval's answer to the log", metadata: ["approval": "\(id)", "error": "\(error)"])
        }
        return recorded.line
    }

    static func repeatAnswer(_ answer: ApprovalAnswer, recorded: EventLog.RecordedDecision, approval id: String) throws -> String {
        guard recorded.decision == answer.decision.rawValue else {
            throw ProblemDetails(.conflict, "approval \(id) was already answered",
                                 detail: "approval \(id) was already answered with \(recorded.decision); it cannot be changed to \(answer.decision.rawValue)",
                                 extra: ["decision": .string(recorded.decision)])
        }
        return recorded.line
    }
}
