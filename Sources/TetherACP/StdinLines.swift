import Foundation

/// stdin as lines, read on a thread of its own (a blocking read must not hold a task of the
/// cooperative pool). The stream finishes at EOF.
public enum StdinLines {
    public static func stream() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) {
                    continuation.yield(line)
                }
                continuation.finish()
            }
            thread.name = "tether-acp-stdin"
            thread.start()
        }
    }
}
