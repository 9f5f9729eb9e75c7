import FlyingSocks
import Logging

extension Logger {
    /// The default for simulators whose caller passes no logger: discards everything, so stdout
    /// stays pure JSON Lines for the CLI.
    static var simulatorNoOp: Logger {
        Logger(label: "tether.sim", factory: { _ in SwiftLogNoOpLogHandler() })
    }
}

/// Routes FlyingFox's own diagnostics into swift-log. FlyingFox's default logger prints to stdout,
/// which would corrupt the CLI's JSON Lines, so every server here is given this bridge instead.
struct FlyingFoxLogBridge: FlyingSocks.Logging {
    let logger: Logger
    /// Set when the server is being stopped: closing its listener ends the accept loop with a
    /// socket error FlyingFox calls critical, which `tether simulate` then printed on every Ctrl-C.
    var stopping: Locked<Bool>? = nil

    func logDebug(_ debug: @autoclosure () -> String) { logger.trace("\(debug())") }
    func logInfo(_ info: @autoclosure () -> String) { logger.trace("\(info())") }
    func logWarning(_ warning: @autoclosure () -> String) { logger.debug("\(warning())") }
    func logError(_ error: @autoclosure () -> String) { logger.debug("\(error())") }
    func logCritical(_ critical: @autoclosure () -> String) {
        if stopping?.withLock({ $0 }) == true {
            logger.debug("\(critical()) (stopping)")
        } else {
            logger.warning("\(critical())")
        }
    }
}
