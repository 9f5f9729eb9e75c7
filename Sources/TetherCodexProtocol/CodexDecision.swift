import TetherCore
import TetherStreaming

/// Tether's decisions ⇄ the app-server's approval answers (v2, camelCase values; the amendment's
/// inner key is snake_case, as Codex's serde names it).
public enum CodexDecision {
    /// The `result` that answers a request of `kind` with `answer` (CodexMonitor relays it with
    /// `respond_to_server_request`).
    public static func result(for answer: ApprovalAnswer, kind: CodexApprovalID.Kind) throws -> JSONValue {
        switch kind {
        case .command, .fileChange:
            break
        case .permissions, .userInput:
            let what = kind == .permissions ? "permission requests" : "questions (requestUserInput)"
            throw TetherError(.unsupported, "answering Codex \(what) from Tether is not supported yet",
                              hint: "answer it in CodexMonitor itself; Tether shows it so you know one is waiting")
        }
        let decision: JSONValue
        switch answer.decision {
        case .accept: decision = "accept"
        case .acceptForSession: decision = "acceptForSession"
        case .acceptWithAmendment:
            guard kind == .command else {
                throw TetherError(.usage, "a file change cannot be accepted with an amendment (only commands take an exec-policy amendment)",
                                  hint: "use --decision accept or accept_for_session")
            }
            guard !answer.amendment.isEmpty else {
                throw TetherError(.usage, "accept_with_amendment needs the command prefix to allow from now on",
                                  hint: "e.g. tether approve ID --decision accept_with_amendment --amendment npm test")
            }
            decision = ["acceptWithExecpolicyAmendment": ["execpolicy_amendment": JSONValue(answer.amendment)]]
        case .decline: decision = "decline"
        case .cancel: decision = "cancel"
        }
        return ["decision": decision]
    }

    /// One entry of a request's `availableDecisions` (a string, or an object keyed by the
    /// decision) → Tether's decision; nil for those Tether cannot express (network amendments).
    public static func decision(fromWire value: JSONValue) -> Decision? {
        let name = value.string ?? value.object?.keys.first
        switch name {
        case "accept": return .accept
        case "acceptForSession": return .acceptForSession
        case "acceptWithExecpolicyAmendment": return .acceptWithAmendment
        case "decline": return .decline
        case "cancel": return .cancel
        default: return nil
        }
    }

    /// The decision an item's final status implies, for approvals resolved without
    /// `serverRequest/resolved` (older app-servers, or resolved while we were away).
    public static func decision(fromItemStatus status: String?) -> String {
        switch status {
        case "completed", "inProgress": return Decision.accept.rawValue
        case "declined": return Decision.decline.rawValue
        default: return undetermined
        }
    }

    /// A `requestUserInput` question as the domain's questions read (`QuestionForm`): `{id,
    /// question, header, options:[{label, description}], multiple:false, custom}` — `custom` is
    /// Codex's `isOther` (text of one's own is taken), `secret` its `isSecret`.
    public static func question(_ question: JSONValue) -> JSONValue {
        .object(.compact([
            "id": JSONValue(question["id"]?.string), "question": JSONValue(question["question"]?.string),
            "header": JSONValue(question["header"]?.string),
            "options": .array((question["options"]?.array ?? []).map { option in
                .object(.compact(["label": JSONValue(option["label"]?.string), "description": JSONValue(option["description"]?.string)]))
            }),
            "multiple": false, "custom": .bool(question["isOther"]?.bool ?? false), "secret": .bool(question["isSecret"]?.bool ?? false),
        ]))
    }

    /// The answer to a `requestUserInput` request asking `questions` (its params' `questions`):
    /// `{answers: {QUESTION_ID: {answers: [..]}}}`, the answer's lists in the questions' order.
    /// Declined (or cancelled): no answers.
    public static func userInputResult(for answer: ApprovalAnswer, questions: [JSONValue]) throws -> JSONValue {
        guard answer.decision == .accept else { return ["answers": [:]] }
        let ids = questions.compactMap { $0["id"]?.string }
        guard !ids.isEmpty else {
            throw TetherError(.badData, "Codex asked a question without question ids; it cannot be answered")
        }
        guard answer.answers.count == ids.count, answer.answers.allSatisfy({ !$0.isEmpty }) else {
            let asked = questions.enumerated().map { "\($0.offset + 1). \($0.element["question"]?.string ?? "?")" }.joined(separator: "; ")
            throw TetherError(.usage, "Codex asks \(ids.count) question\(ids.count == 1 ? "" : "s") (\(asked)) and got \(answer.answers.count) answer\(answer.answers.count == 1 ? "" : "s")",
                              hint: "answer each with --answer CHOICE (or N=CHOICE), or dismiss it with --decision decline")
        }
        var answers: JSONObject = [:]
        for (id, chosen) in zip(ids, answer.answers) { answers[id] = ["answers": JSONValue(chosen)] }
        return ["answers": .object(answers)]
    }

    /// The decision of an approval that was answered in a way the wire does not say
    /// (`serverRequest/resolved` from another client).
    public static let undetermined = "unknown"
}
