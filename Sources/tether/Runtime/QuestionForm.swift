import TetherCore
import TetherStreaming

/// A question approval's questions (`ApprovalQuestion`), and how the `--answer` values a person
/// typed become its answer: one list of labels per question.
struct QuestionForm {
    typealias Question = ApprovalQuestion

    let questions: [Question]

    init?(_ data: JSONValue?) {
        guard let questions = ApprovalQuestion.list(data) else { return nil }
        self.questions = questions
    }

    /// `--answer` values in order: `VALUE` answers the first question, `N=VALUE` (1-based) or
    /// `HEADER=VALUE` another; VALUE is a choice's label (any case), its number, or — where the
    /// question takes it — text of one's own. Repeat for a question that takes several.
    func answers(from typed: [String]) throws -> [[String]] {
        var answers = Array(repeating: [String](), count: questions.count)
        for entry in typed {
            let (index, value) = target(of: entry)
            let question = questions[index]
            answers[index].append(try choice(value, for: question, number: index + 1))
            if answers[index].count > 1, !question.multiple {
                throw TetherError(.usage, "question \(index + 1) (\(question.text)) takes one answer, and got \(answers[index].count)")
            }
        }
        if let missing = answers.firstIndex(where: \.isEmpty) {
            let question = questions[missing]
            let key = questions.count > 1 ? "\(missing + 1)=" : ""
            throw TetherError(.usage, "question \(missing + 1) has no answer: \(question.text) (choices: \(question.labels.joined(separator: ", ")))",
                              hint: "add --answer \(shellQuote(key + (question.labels.first ?? "TEXT")))")
        }
        return answers
    }

    private func target(of entry: String) -> (Int, String) {
        guard let equals = entry.firstIndex(of: "=") else { return (0, entry) }
        let key = String(entry[..<equals])
        let value = String(entry[entry.index(after: equals)...])
        if let number = Int(key), (1...questions.count).contains(number) { return (number - 1, value) }
        if let index = questions.firstIndex(where: { $0.header?.lowercased() == key.lowercased() }) { return (index, value) }
        return (0, entry)
    }

    private func choice(_ value: String, for question: Question, number: Int) throws -> String {
        if let label = question.labels.first(where: { $0.lowercased() == value.lowercased() }) { return label }
        if let index = Int(value), question.labels.indices.contains(index - 1) { return question.labels[index - 1] }
        if question.custom, !value.isEmpty { return value }
        throw TetherError(.usage, "\"\(value)\" is not a choice of question \(number) (\(question.text)): \(question.labels.joined(separator: ", "))")
    }

    /// The command line's `--answer` value that picks `label` for question `index`.
    func answerArgument(_ label: String, question index: Int) -> String {
        shellQuote(questions.count > 1 ? "\(index + 1)=\(label)" : label)
    }
}
