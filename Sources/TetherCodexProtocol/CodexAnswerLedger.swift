import Synchronization
import TetherCore

/// The decisions this process sent with `approve`, by approval id. Codex's
/// `serverRequest/resolved` says that a request was answered, not how; when the answer was ours,
/// the stream reports the decision we sent instead of "unknown". Shared by every copy of the
/// backend value (a class), bounded like the mappers' memories.
public final class CodexAnswerLedger: Sendable {
    public init() {}

    private let decisions = Mutex<[String: String]>([:])
    static let capacity = 1024

    public func record(_ decision: Decision, for approval: String) {
        decisions.withLock { decisions in
            if decisions.count >= Self.capacity { decisions.removeAll(keepingCapacity: true) }
            decisions[approval] = decision.rawValue
        }
    }

    /// An answer that was not sent after all.
    public func forget(_ approval: String) {
        _ = decisions.withLock { $0.removeValue(forKey: approval) }
    }

    /// `event` with the decision we sent, when it is an `approval.resolved` the wire left
    /// undecided and the answer came from this process.
    public func filledIn(_ event: Event) -> Event {
        guard event.type == .approvalResolved, event.data["decision"]?.string == CodexDecision.undetermined,
              let id = event.data["id"]?.string, let sent = decisions.withLock({ $0[id] }) else { return event }
        var event = event
        event.data["decision"] = .string(sent)
        return event
    }
}
