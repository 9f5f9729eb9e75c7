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
        if let recorded = try await journal.log.decision(profile: profile.name, approval: id) {
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

    /// Records the answer in the log's database, then sends it to the backend: another replica
    /// answering the same approval meanwhile finds it recorded (and answers as for a repeat).
    private func send(_ answer: ApprovalAnswer, approval id: String, profile: ServedProfile) async throws -> String {
        let log = journal.log
        // What the answer stands for until the backend's own `approval.resolved` replaces it.
        let claim = Self.line(of: profile.stamp(.approvalResolved(id: id, session: nil, turn: nil, decision: answer.decision.rawValue)))
        if let recorded = try await log.claimDecision(profile: profile.name, approval: id, decision: answer.decision.rawValue, line: claim) {
            return try Self.repeatAnswer(answer, recorded: recorded, approval: id)
        }
        let resolved: Event
        do {
            resolved = profile.stamp(try await profile.backend.approve(id: id, answer: answer))
        } catch {
            try await log.withdrawDecision(profile: profile.name, approval: id, line: claim)
            let outcome = try await Self.problem(error, answering: id, in: profile, log: log, answer: answer)
            if let repeated = outcome as? RepeatAnswer { return repeated.line }
            throw outcome
        }
        let line = Self.line(of: resolved)
        try await log.settleDecision(profile: profile.name, approval: id, claim: claim, line: line)
        // Another gateway's `approval.resolved` comes through its log, with its cursor: a copy
        // recorded here too would race it, and whichever came second would be dropped as a
        // duplicate — when that was the upstream's, its cursor would be missing from this log.
        guard profile.kind != .gateway else { return line }
        do {
            try await journal.record(resolved)
        } catch {
            logger.error("cannot append an approval's answer to the log", metadata: ["approval": "\(id)", "error": "\(error)"])
        }
        return line
    }

    /// What a failed answer says: a repeat, if it was answered meanwhile elsewhere (the backend's
    /// resolved event is in the log); else why it failed.
    static func problem(_ error: any Error, answering id: String, in profile: ServedProfile, log: any EventStore,
                        answer: ApprovalAnswer) async throws -> any Error {
        switch error {
        case let error as TetherError:
            if let recorded = try await log.decision(profile: profile.name, approval: id) {
                return RepeatAnswer(line: try repeatAnswer(answer, recorded: recorded, approval: id))
            }
            let requested = try await log.wasRequested(profile: profile.name, approval: id)
            if error.code == .notFound || (error.code == .usage && !requested) {
                return ProblemDetails(.notFound, "no pending approval \(id) in profile \(profile.name)",
                                      detail: "GET /v1/approvals lists the pending ones; \(error.message)")
            }
            return ProblemDetails(error, doing: "answering approval \(id)")
        case is CancellationError:
            return CancellationError()
        default:
            // A transport failure: the backend may or may not have the answer; asking again is safe.
            return ProblemDetails(.unavailable, "answering approval \(id) failed", detail: "\(error)")
        }
    }

    /// An answer that turned out to repeat the recorded one: its line is the response.
    struct RepeatAnswer: Error {
        let line: String
    }

    static func line(of event: Event) -> String {
        var codec = EventCodec()
        var bytes = codec.encode(event)
        bytes.removeLast()
        return String(decoding: bytes, as: UTF8.self)
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
