import Foundation
import TetherCore

/// The readable streaming view for a terminal: assistant text flows inline as it arrives, tool
/// and command parts are one-line summaries with their status, approvals stand out with their
/// id, risk and the exact command that answers them.
struct TextRenderer {
    let style: Style
    /// Printed commands repeat `-p`/`--config` where this one needs them.
    let invocation: Invocation
    /// Whether `approve --answer` reaches this backend (OpenCode): else a question is only shown.
    let answersQuestions: Bool
    /// Parts whose text was streamed by deltas: their `part.completed` only ends the line.
    private var streamedParts: Set<String> = []
    /// Whether the cursor is in the middle of a line of streamed text.
    private var midLine = false
    /// A connection change other than connected was said on stderr (`connectionNote`).
    private var troubled = false

    init(style: Style, invocation: Invocation = .plain, answersQuestions: Bool = false) {
        self.style = style
        self.invocation = invocation
        self.answersQuestions = answersQuestions
    }

    mutating func render(_ event: Event) -> String {
        let data = event.data
        switch event.type {
        case .partDelta:
            guard let delta = data["delta"]?.string, let part = event.part else { return "" }
            let kind = data["kind"]?.string
            guard kind == PartKind.text.rawValue || kind == PartKind.reasoning.rawValue
                || data["field"]?.string == "output" else { return "" }
            var out = ""
            if !streamedParts.contains(part) {
                streamedParts.insert(part)
                out += breakLine()
                if kind == PartKind.reasoning.rawValue { out += style.dim("(thinking) ") }
            }
            midLine = !delta.hasSuffix("\n")
            return out + (kind == PartKind.reasoning.rawValue ? style.dim(delta) : delta)
        case .partStarted:
            return ""
        case .partCompleted:
            return renderCompletedPart(event)
        case .partRemoved:
            return line(style.dim("  part \(event.part ?? "?") removed"))
        case .turnStarted:
            return line(style.dim("── turn \(event.turn ?? "") started"))
        case .turnCompleted:
            let status = data["status"]?.string ?? "?"
            let colored = status == "completed" ? style.green(status) : status == "cancelled" ? style.yellow(status) : style.red(status)
            var text = "── turn \(event.turn ?? "") \(colored)"
            if let error = data["error"]?.string { text += ": \(error)" }
            return line(text)
        case .approvalRequested:
            return renderApproval(event)
        case .approvalResolved:
            return line(style.cyan("✔ approval \(data["id"]?.string ?? "?") → \(data["decision"]?.string ?? "?")"))
        case .sessionStatus:
            let status = data["status"]?.string.map { SessionStatus(rawValue: $0).map(statusText) ?? $0 } ?? "?"
            return line(style.dim("· session \(event.session ?? "") \(status)"
                + (data["message"]?.string.map { ": \($0)" } ?? "")))
        case .sessionCreated, .sessionUpdated, .sessionDeleted:
            let verb = event.type.rawValue.split(separator: ".").last.map(String.init) ?? ""
            return line(style.dim("· session \(event.session ?? "") \(verb)"
                + (data["title"]?.string.map { " — \($0)" } ?? "")))
        case .planUpdated:
            let steps = data["steps"]?.array ?? []
            var text = style.bold("Plan:")
            for step in steps {
                let mark = switch step["status"]?.string {
                case "completed": "☑"
                case "in_progress": "▸"
                default: "☐"
                }
                text += "\n  \(mark) \(step["step"]?.string ?? "")"
            }
            return line(text)
        case .usageUpdated:
            var parts: [String] = []
            if let input = data["input_tokens"]?.int { parts.append("in \(input)") }
            if let output = data["output_tokens"]?.int { parts.append("out \(output)") }
            if let window = data["context_window"]?.int { parts.append("window \(window)") }
            if let cost = data["cost"]?.double { parts.append("$\(cost)") }
            return parts.isEmpty ? "" : line(style.dim("· usage " + parts.joined(separator: ", ")))
        case .notificationReceived:
            // The id first: `notifications read ID` and `delete ID` need it.
            let id = data["id"]?.stringish.map { style.dim($0) + "  " } ?? ""
            let unread = data["read"]?.bool == false ? style.bold("• ") : ""
            return line(id + unread + style.bold("🔔 \(data["title"]?.string ?? "")") + " \(data["body"]?.string ?? "")")
        case .connectionState:
            return ""  // on stderr: `connectionNote`
        case .terminalOutput:
            return data["data"]?.string ?? ""
        case .terminalExit:
            return line(style.dim("terminal exited \(data["code"]?.int.map(String.init) ?? "")"))
        case .error:
            var text = style.red("error [\(data["code"]?.string ?? "?")]: \(data["message"]?.string ?? "")")
            if let hint = data["hint"]?.string { text += "\n  → " + invocation.rewritingCommands(in: hint) }
            return line(text)
        }
    }

    mutating func finish() -> String { breakLine() }

    /// What a connection change says on stderr, unstyled (the reader of stdout gets the conversation):
    /// a lost or failing connection, and being connected again after one; nil for the rest (the
    /// first connect is the status line's).
    mutating func connectionNote(_ event: Event) -> String? {
        let state = event.data["state"]?.string ?? ""
        let who = event.profile ?? "the backend"
        switch state {
        case "connecting":
            return nil
        case "connected":
            guard troubled else { return nil }
            troubled = false
            return "tether: \(who): connected again\n"
        default:
            troubled = true
            var text = "tether: \(who): \(state)"
            if let reason = event.data["reason"]?.string, !reason.isEmpty { text += ": " + reason }
            if let attempt = event.data["attempt"]?.int { text += " (attempt \(attempt))" }
            return text + "\n"
        }
    }

    private mutating func breakLine() -> String {
        guard midLine else { return "" }
        midLine = false
        return "\n"
    }

    private mutating func line(_ text: String) -> String {
        breakLine() + text + "\n"
    }

    private mutating func renderCompletedPart(_ event: Event) -> String {
        let data = event.data
        let kind = data["kind"]?.string ?? ""
        switch kind {
        case PartKind.text.rawValue, PartKind.reasoning.rawValue:
            if let part = event.part, streamedParts.contains(part) { return line("") }
            guard let text = data["text"]?.string, !text.isEmpty else { return "" }
            if data["role"]?.string == PartRole.user.rawValue { return line(style.bold("> ") + text) }
            return line(kind == PartKind.reasoning.rawValue ? style.dim(text) : text)
        case PartKind.step.rawValue, PartKind.plan.rawValue, PartKind.todo.rawValue:
            return ""
        default:
            let status = data["status"]?.string ?? "completed"
            let mark = switch status {
            case "completed": style.green("✓")
            case "failed": style.red("✗")
            case "declined": style.yellow("⊘")
            default: style.dim("…")
            }
            let name = data["tool"]?.string ?? data["title"]?.string ?? kind
            let detail = data["command"]?.string ?? data["title"]?.string ?? data["path"]?.string ?? ""
            return line("  \(mark) \(style.bold(name))\(detail.isEmpty || detail == name ? "" : ": \(detail)") \(style.dim("(\(status))"))")
        }
    }

    private mutating func renderApproval(_ event: Event) -> String {
        let data = event.data
        let id = data["id"]?.string ?? "?"
        let risk = data["risk"]?.string ?? "?"
        let riskText = risk == "high" ? style.red(risk) : risk == "medium" ? style.yellow(risk) : style.green(risk)
        let isQuestion = data["kind"]?.string == Approval.Kind.question.rawValue
        let title = data["title"]?.string ?? data["kind"]?.string ?? "request"
        var text = style.inverse(isQuestion ? " QUESTION " : " APPROVAL ") + " " + style.bold(title)
            + " [risk \(riskText)]"
        if let command = data["command"]?.string { text += "\n    command: \(command)" }
        if let patterns = data["patterns"]?.array, !patterns.isEmpty {
            text += "\n    patterns: " + patterns.compactMap(\.string).joined(separator: ", ")
        }
        if let cwd = data["cwd"]?.string { text += "\n    cwd: \(cwd)" }
        if let reason = data["reason"]?.string { text += "\n    reason: \(reason)" }
        text += "\n    id: \(id)"
        if isQuestion {
            return line(text + questionLines(id: id, title: title, QuestionForm(data["questions"])))
        }
        let options = data["options"]?.array?.compactMap(\.string) ?? []
        if options.isEmpty {
            // Nothing this backend lets Tether answer with (CodexMonitor's permission requests).
            return line(text + Self.unanswerable(style))
        }
        // The command alone on its line: copied whole, it runs.
        text += "\n    answer: " + style.cyan(invocation.command("approve \(shellQuote(id)) --decision \(options.first ?? "accept")"))
        if options.count > 1 { text += "\n    " + style.dim("decisions: \(options.joined(separator: ", "))") }
        return line(text)
    }

    private static func unanswerable(_ style: Style) -> String {
        "\n    " + style.dim("answer it in the backend's own client: Tether cannot answer this kind of request there")
    }

    /// A question's choices, numbered, and the commands that answer or dismiss it.
    private func questionLines(id: String, title: String, _ form: QuestionForm?) -> String {
        var text = ""
        guard let form else {
            return answersQuestions ? "\n    answer: " + style.cyan(invocation.command("approve \(shellQuote(id)) --answer TEXT")) : Self.unanswerable(style)
        }
        for (index, question) in form.questions.enumerated() {
            let number = form.questions.count > 1 ? "\(index + 1). " : ""
            // One question is the title already: only its choices follow.
            if form.questions.count > 1 || question.text != title || question.multiple {
                text += "\n    " + style.bold(number + question.text) + (question.multiple ? style.dim(" (one or more)") : "")
            }
            for (choice, label) in question.labels.enumerated() {
                let about = question.descriptions[choice].map { style.dim(" — \($0)") } ?? ""
                text += "\n      \(choice + 1)) \(label)\(about)"
            }
        }
        guard answersQuestions else { return text + Self.unanswerable(style) }
        let example = form.questions.enumerated().map { index, question in
            "--answer " + form.answerArgument(question.labels.first ?? "TEXT", question: index)
        }.joined(separator: " ")
        text += "\n    answer: " + style.cyan(invocation.command("approve \(shellQuote(id)) \(example)"))
        text += "\n    dismiss: " + style.cyan(invocation.command("approve \(shellQuote(id)) --decision decline"))
        return text
    }
}

