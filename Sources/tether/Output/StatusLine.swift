import Synchronization

/// A one-line status on stderr while something slow happens (connecting, a tunnel), shown only
/// when stderr is a terminal and erased as soon as there is something real to show.
final class StatusLine: Sendable {
    static let shared = StatusLine(output: .standardError)

    private let output: LineOutput
    private let visible = Mutex(false)

    init(output: LineOutput) { self.output = output }

    func show(_ text: String) {
        guard output.isTerminal else { return }
        visible.withLock { $0 = true }
        output.writeAsIs(Array("\r\u{1B}[2K\u{1B}[2m\(text)\u{1B}[0m".utf8))
    }

    func clear() {
        let wasVisible = visible.withLock { value in
            defer { value = false }
            return value
        }
        if wasVisible { output.writeAsIs(Array("\r\u{1B}[2K".utf8)) }
    }
}
