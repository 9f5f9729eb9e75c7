import Synchronization
import TetherCore
import TetherStreaming

/// `send --follow` on a terminal asks for an approval where it appears, the way `gh` asks: one
/// key per option, Enter leaves it pending (with the command that answers it later). Copying a
/// 60-character id into a second terminal was the only way before. Never used unless both stdin
/// and stdout are terminals; approvals come one at a time, in the order they were asked.
final class ApprovalPrompt: Sendable {
    /// What one key does.
    struct Choice: Sendable {
        let key: Character
        let label: String
        let answer: ApprovalAnswer
    }

    private struct State {
        var queue: [Event] = []
        var current: String?
        var running = false
        var stopped = false
    }

    private let backend: any Backend
    private let invocation: Invocation
    private let style: Style
    let keys = TerminalKeys()
    private let state = Mutex(State())

    init(backend: any Backend, invocation: Invocation, style: Style) {
        self.backend = backend
        self.invocation = invocation
        self.style = style
    }

    /// The keys for an approval, from its options (or a one-question question's choices); empty
    /// when nothing can be answered from here.
    static func choices(for data: JSONObject, answersQuestions: Bool) -> [Choice] {
        if data["kind"]?.string == Approval.Kind.question.rawValue {
            guard answersQuestions, let form = QuestionForm(data["questions"]), form.questions.count == 1,
                  let question = form.questions.first, (1...9).contains(question.labels.count) else { return [] }
            var choices = question.labels.enumerated().map { index, label in
                Choice(key: Character(String(index + 1)), label: label, answer: ApprovalAnswer(decision: .accept, answers: [[label]]))
            }
            choices.append(Choice(key: "d", label: "dismiss", answer: ApprovalAnswer(decision: .decline)))
            return choices
        }
        let offered = (data["options"]?.array ?? []).compactMap { $0.string.flatMap(Decision.init(rawValue:)) }
        return offered.compactMap { decision in
            switch decision {
            case .accept: Choice(key: "a", label: "accept", answer: ApprovalAnswer(decision: .accept))
            case .acceptForSession: Choice(key: "s", label: "for session", answer: ApprovalAnswer(decision: .acceptForSession))
            case .decline: Choice(key: "d", label: "decline", answer: ApprovalAnswer(decision: .decline))
            case .cancel: Choice(key: "c", label: "cancel", answer: ApprovalAnswer(decision: .cancel))
            case .acceptWithAmendment: nil  // takes an argv: only `tether approve … --amendment`
            }
        }
    }

    /// An approval was asked: it is put to the person once those before it are settled.
    func offer(_ event: Event, answersQuestions: Bool) {
        guard !Self.choices(for: event.data, answersQuestions: answersQuestions).isEmpty else { return }
        let start = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.queue.append(event)
            defer { state.running = true }
            return !state.running
        }
        if start { Task { await drain(answersQuestions: answersQuestions) } }
    }

    /// An approval was answered (here or elsewhere): not asked, or no longer waited for.
    func resolved(_ id: String) {
        let waiting = state.withLock { state -> Bool in
            state.queue.removeAll { $0.data["id"]?.string == id }
            return state.current == id
        }
        if waiting { keys.stop() }
    }

    /// The turn is over: nothing more is asked, and the terminal is put back.
    func stop() {
        state.withLock { $0.stopped = true }
        keys.stop()
        keys.restore()
    }

    private func drain(answersQuestions: Bool) async {
        while let (next, mark) = state.withLock({ state -> (Event, Int)? in
            guard !state.stopped, !state.queue.isEmpty else {
                state.running = false
                state.current = nil
                return nil
            }
            let next = state.queue.removeFirst()
            state.current = next.data["id"]?.string
            // Taken while it is current: an answer from elsewhere from now on ends the wait.
            return (next, keys.mark())
        }) {
            await ask(next, mark: mark, answersQuestions: answersQuestions)
        }
    }

    private func ask(_ event: Event, mark: Int, answersQuestions: Bool) async {
        guard let id = event.data["id"]?.string else { return }
        let choices = Self.choices(for: event.data, answersQuestions: answersQuestions)
        let menu = choices.map { style.bold("[\($0.key)]") + " \($0.label)" }.joined(separator: " ")
        // Fits 80 columns with every option: a menu that wraps reads as two.
        say("answer now? \(menu) \(style.bold("[Enter]")) later ")
        while true {
            guard let byte = await keys.nextKey(after: mark) else {
                say("\n")  // answered elsewhere, or the turn ended
                return
            }
            let key = Character(Unicode.Scalar(byte))
            if key == "\r" || key == "\n" {
                let later = choices.first.map { choice in
                    choice.answer.answers.first.map { "--answer \(shellQuote($0.first ?? ""))" } ?? "--decision \(choice.answer.decision.rawValue)"
                } ?? ""
                say(style.dim("left pending") + "\n    answer later: "
                    + style.cyan(invocation.command("approve \(shellQuote(id)) \(later)")) + "\n")
                return
            }
            guard let choice = choices.first(where: { $0.key == Character(key.lowercased()) }) else { continue }
            say("\(choice.label)\n")
            do {
                _ = try await backend.approve(id: id, answer: choice.answer)
            } catch let error as TetherError {
                say(style.red("tether: \(error.hintRewritten(for: invocation).description)") + "\n")
            } catch {
                say(style.red("tether: answering \(id) failed: \(error)") + "\n")
            }
            return
        }
    }

    private func say(_ text: String) { LineOutput.standardOutput.write(text) }
}
