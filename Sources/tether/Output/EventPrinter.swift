import TetherCore

/// Prints normalized events: JSON Lines (each line whole and written at once) or the readable
/// streaming view. Stamps every event with the profile and backend it came from.
final class EventPrinter {
    let format: OutputFormat
    private var codec: EventCodec
    private let output: LineOutput
    private var renderer: TextRenderer
    /// For the notes text mode writes on stderr (stderr's own terminal, not stdout's).
    private let noteStyle: Style
    private let profile: String?
    private let backend: BackendKind?
    private let invocation: Invocation
    private var printedAny = false

    init(format: OutputFormat, includeRaw: Bool, profile: String?, backend: BackendKind?, invocation: Invocation = .plain,
         answersQuestions: Bool = false,
         output: LineOutput = .standardOutput, style: Style, noteStyle: Style = Style(enabled: false)) {
        self.noteStyle = noteStyle
        self.format = format
        codec = EventCodec(includeRaw: includeRaw)
        self.output = output
        renderer = TextRenderer(style: style, invocation: invocation, answersQuestions: answersQuestions)
        self.invocation = invocation
        self.profile = profile
        self.backend = backend
    }

    func print(_ event: Event) {
        print(contentsOf: [event])
    }

    /// Prints a batch (what one network read brought) with one write: lines are never held
    /// back for more, and never cost a system call each.
    func print(contentsOf events: [Event]) {
        guard !events.isEmpty else { return }
        if !printedAny {
            printedAny = true
            StatusLine.shared.clear()
        }
        switch format {
        case .jsonl:
            // An error's hint is for a person too (a script shows it): its commands run as printed.
            if !invocation.globalArguments.isEmpty, events.contains(where: { $0.type == .error && $0.data["hint"] != nil }) {
                let rewritten = events.map { event in
                    guard event.type == .error, let hint = event.data["hint"]?.string else { return event }
                    var event = event
                    event.data["hint"] = .string(invocation.rewritingCommands(in: hint))
                    return event
                }
                output.write(lines: rewritten, codec: &codec, profile: profile, backend: backend)
            } else {
                output.write(lines: events, codec: &codec, profile: profile, backend: backend)
            }
        case .text:
            var text = ""
            for event in events {
                var event = event
                if event.profile == nil { event.profile = profile }
                if event.backend == nil { event.backend = backend }
                if event.type == .connectionState, let note = renderer.connectionNote(event) {
                    // On one terminal with stdout, a streamed line is ended first; stdout going
                    // elsewhere (a file) is not touched.
                    if output.isTerminal && LineOutput.standardError.isTerminal { text += renderer.finish() }
                    if !text.isEmpty { output.write(text) }
                    text = ""
                    LineOutput.standardError.write(noteStyle.dim(String(note.dropLast())) + "\n")
                    continue
                }
                text += renderer.render(event)
            }
            if !text.isEmpty { output.write(text) }
        }
    }

    /// Prints a whole stream, batch by batch.
    func print(_ stream: EventStream) async throws {
        for try await batch in stream.batches { print(contentsOf: batch) }
    }

    /// Ends the text view cleanly (a trailing newline after streamed text).
    func finish() {
        if format == .text {
            let text = renderer.finish()
            if !text.isEmpty { output.write(text) }
        }
    }
}
