import Foundation
import Logging
import Synchronization

/// Logs go to stderr through swift-log; stdout carries only data.
enum LogSetup {
    private static let done = Mutex(false)

    static func logger(verbosity: Int) -> Logger {
        let level: Logger.Level = switch verbosity {
        case 0: .warning
        case 1: .info
        case 2: .debug
        default: .trace
        }
        done.withLock { done in
            guard !done else { return }
            done = true
            LoggingSystem.bootstrap { label in StatusLineAware(label: label, level: level) }
        }
        var logger = Logger(label: "tether")
        logger.logLevel = level
        return logger
    }
}

/// Log lines on stderr, one line each, whole: `TIME LEVEL LABEL: [MODULE] MESSAGE key=value …`. A value
/// with spaces is quoted, and one spanning lines (a `TetherError` with its `→ hint`) is folded
/// onto the line: with swift-log's stream handler the hint's line ran on into the next fields.
/// The status line ("connecting…", drawn without a newline) is erased first, as `LineOutput`
/// does for everything else.
struct StatusLineAware: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    let label: String

    init(label: String, level: Logger.Level) {
        self.label = label
        logLevel = level
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        var line = "\(Self.timestamp()) \(event.level) \(label): [\(event.source)] \(Self.folded(event.message.description))"
        for key in fields.keys.sorted() {
            line += " \(key)=\(Self.quoted(Self.folded(fields[key]!.description)))"
        }
        LineOutput.standardError.write(line + "\n")
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// One line: a hint's "\n  → " becomes " → ", any other line break a space.
    static func folded(_ text: String) -> String {
        guard text.contains(where: \.isNewline) else { return text }
        return text.replacingOccurrences(of: "\n  → ", with: " → ")
            .split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    private static func timestamp() -> String {
        Date.now.formatted(.iso8601)
    }
}
