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
                return handler
            }
        }
        var logger = Logger(label: "tether")
        logger.logLevel = level
        return logger
    }
}
