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
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return StatusLineAware(inner: handler)
            }
        }
        var logger = Logger(label: "tether")
        logger.logLevel = level
        return logger
    }
}

/// A log handler that erases the status line ("connecting…", drawn without a newline) before
/// each line it writes, as `LineOutput` does for everything else.
struct StatusLineAware: LogHandler {
    var inner: StreamLogHandler

    func log(event: LogEvent) {
        StatusLine.shared.clear()
        inner.log(event: event)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }
}
