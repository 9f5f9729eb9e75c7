/// The scripted turns the OpenCode simulator can play.
public enum OpenCodeScenario: String, Sendable, CaseIterable, Codable {
    /// A streamed text reply, then idle.
    case plain
    /// A reasoning part, text, a `bash` tool call that asks permission, then (on `once`/`always`) a
    /// second assistant message with the answer; `reject` and abort have their own endings.
    case permission
    /// The assistant message ends with an `APIError`, then idle.
    case failed
    /// A `question` tool that asks the user to choose (`question.asked`), answered over
    /// `POST /question/{id}/reply` or dismissed with `/reject`.
    case question

    /// The scenario a prompt asks for when none is forced: running, removing or cleaning something
    /// needs permission; asking the user something is a question; a prompt about failing fails.
    public static func forPrompt(_ text: String) -> OpenCodeScenario {
        let words = Set(
            text.lowercased()
                .split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "-" })
                .map(String.init)
        )
        if !words.isDisjoint(with: ["fail", "failed", "fails", "failing"]) {
            return .failed
        }
        if !words.isDisjoint(with: ["question", "ask", "choose"]) {
            return .question
        }
        if !words.isDisjoint(with: ["run", "remove", "rm", "clean", "delete", "execute", "bash", "install"]) {
            return .permission
        }
        return .plain
    }
}
