import TetherCore
import TetherStreaming

/// A `session/request_permission` to put to the editor for one approval: the tool call it
/// belongs to and the options the approval allows, each tied to the decision it sends.
public struct PermissionAsk: Sendable, Equatable {
    public struct Option: Sendable, Equatable {
        public var optionID: String
        public var name: String
        /// ACP's `PermissionOptionKind`: `allow_once`, `allow_always`, `reject_once`.
        public var kind: String
        public var decision: Decision
        /// For a question: the labels this option answers it with (one list per question).
        public var answers: [[String]] = []

        public var json: JSONValue {
            ["optionId": .string(optionID), "name": .string(name), "kind": .string(kind)]
        }
    }

    public var approvalID: String
    public var session: String
    /// A `ToolCallUpdate`: `toolCallId` plus what the editor shows while asking.
    public var toolCall: JSONObject
    public var options: [Option]
    /// Every decision the backend accepts for this approval (more than the editor is offered:
    /// a `cancelled` answer needs `decline` or `cancel`).
    public var accepted: [Decision]

    /// The ACP options for an approval's decisions: `accept` → allow once, `accept_for_session`
    /// → allow always, `decline` → reject once. `cancel` and `accept_with_amendment` have no ACP
    /// option kind and are not offered.
    public static func options(for decisions: [Decision]) -> [Option] {
        decisions.compactMap { decision in
            switch decision {
            case .accept: Option(optionID: decision.rawValue, name: "Allow once", kind: "allow_once", decision: decision)
            case .acceptForSession:
                Option(optionID: decision.rawValue, name: "Allow for this session", kind: "allow_always", decision: decision)
            case .decline: Option(optionID: decision.rawValue, name: "Reject", kind: "reject_once", decision: decision)
            case .acceptWithAmendment, .cancel: nil
            }
        }
    }

    /// The ACP options for a question the backend can answer: one per choice of its one
    /// question (ACP asks one thing at a time, from fixed options), and one to dismiss it. nil
    /// for what cannot be put that way: several questions, none, or one without choices.
    public static func options(forQuestions questions: [ApprovalQuestion]?) -> [Option]? {
        guard let questions, questions.count == 1, let question = questions.first, !question.labels.isEmpty,
              !question.multiple else { return nil }
        var options = question.labels.enumerated().map { index, label in
            Option(optionID: "answer-\(index + 1)", name: label, kind: "allow_once", decision: .accept, answers: [[label]])
        }
        options.append(Option(optionID: Decision.decline.rawValue, name: "Dismiss", kind: "reject_once", decision: .decline))
        return options
    }

    /// The `params` of the `session/request_permission` request.
    public var params: JSONValue {
        ["sessionId": .string(session), "toolCall": .object(toolCall), "options": .array(options.map(\.json))]
    }
}
