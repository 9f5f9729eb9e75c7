import ArgumentParser

/// `-o jsonl|text`. Without it: JSONL when stdout is not a terminal, text when it is.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case jsonl, text

    static func resolve(_ requested: OutputFormat?) -> OutputFormat {
        requested ?? (LineOutput.standardOutput.isTerminal ? .text : .jsonl)
    }
}

/// ANSI styling, off when `NO_COLOR` is set or the stream is not a terminal.
struct Style: Sendable {
    let enabled: Bool

    static func forStream(_ output: LineOutput, environment: [String: String]) -> Style {
        Style(enabled: output.isTerminal && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb")
    }

    private func wrap(_ code: String, _ text: String) -> String { enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
    func bold(_ text: String) -> String { wrap("1", text) }
    func dim(_ text: String) -> String { wrap("2", text) }
    func red(_ text: String) -> String { wrap("31", text) }
    func green(_ text: String) -> String { wrap("32", text) }
    func yellow(_ text: String) -> String { wrap("33", text) }
    func cyan(_ text: String) -> String { wrap("36", text) }
    func inverse(_ text: String) -> String { wrap("7;33", text) }
}
