import TetherStreaming

/// One question of a question approval (`approval.requested` kind `question`, data `questions`:
/// `[{question, header, options: [{label, description}], multiple, custom}]`), as every backend
/// that asks maps it (OpenCode's question API and forms, Codex's `requestUserInput`). Its answer
/// is a list of labels (or, where `custom`, text of one's own): `ApprovalAnswer.answers`.
public struct ApprovalQuestion: Sendable, Equatable {
    public let text: String
    public let header: String?
    public let labels: [String]
    public let descriptions: [String?]
    public let multiple: Bool
    /// Whether text other than a label is taken (OpenCode: unless `custom: false`).
    public let custom: Bool

    /// The questions of an approval's `data["questions"]`; nil when there are none.
    public static func list(_ data: JSONValue?) -> [ApprovalQuestion]? {
        guard let list = data?.array, !list.isEmpty else { return nil }
        return list.map { question in
            let options = question["options"]?.array ?? []
            return ApprovalQuestion(text: question["question"]?.string ?? "?", header: question["header"]?.string,
                                    labels: options.map { $0["label"]?.string ?? "?" },
                                    descriptions: options.map { $0["description"]?.string },
                                    multiple: question["multiple"]?.bool ?? false,
                                    custom: question["custom"]?.bool ?? true)
        }
    }
}
