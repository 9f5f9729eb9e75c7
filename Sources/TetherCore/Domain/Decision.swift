/// The answer to an approval. Each adapter maps these to its backend's vocabulary and refuses,
/// with a clear error, a decision its backend cannot express.
public enum Decision: String, Sendable, CaseIterable {
    case accept
    case acceptForSession = "accept_for_session"
    case acceptWithAmendment = "accept_with_amendment"
    case decline
    case cancel

    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// A decision plus its optional argv amendment (`accept_with_amendment` only).
public struct ApprovalAnswer: Sendable, Equatable {
    public var decision: Decision
    public var amendment: [String]
    /// A question's answer: for each of its questions, in order, the chosen labels (or typed
    /// text). Empty for anything but a question; a question declined carries none.
    public var answers: [[String]]

    public init(decision: Decision, amendment: [String] = [], answers: [[String]] = []) {
        self.decision = decision
        self.amendment = amendment
        self.answers = answers
    }
}
