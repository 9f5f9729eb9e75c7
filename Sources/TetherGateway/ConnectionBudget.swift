import Foundation
import HummingbirdCore
import Logging

/// How many client connections the gateway holds at once. Every connection is a descriptor, and
/// so is everything the gateway itself needs: the backends' subscriptions, the log's database
/// files, the event loops. Clients may take what the descriptor limit leaves after a reserve for
/// those, and never more than `max_connections`; past that the gateway stops accepting (new
/// connections wait in the kernel's backlog) until one closes — idle ones close after
/// `idle_timeout` — so accept() never fails for lack of a descriptor and the subscriptions
/// always have theirs.
struct ConnectionBudget: Sendable, Equatable {
    /// Descriptors kept for the gateway itself, plus `perProfile` for each served profile.
    static let reserve = 128
    static let perProfile = 16

    let limit: Int
    /// Set when the descriptor limit, not `max_connections`, decided `limit`.
    let descriptorLimit: Int?

    init(maxConnections: Int, profiles: Int, descriptorLimit: Int?) {
        let afterReserve = descriptorLimit.map { $0 - Self.reserve - Self.perProfile * profiles }
        if let afterReserve, afterReserve < maxConnections {
            limit = max(afterReserve, 1)
            self.descriptorLimit = descriptorLimit
        } else {
            limit = maxConnections
            self.descriptorLimit = nil
        }
    }

    /// Raises the soft descriptor limit to the hard one (as Go's runtime does: the soft default
    /// of 1,024 is a relic) and returns the soft limit now in force, nil when unlimited.
    static func raiseDescriptorLimit() -> Int? {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return nil }
        if limits.rlim_cur < limits.rlim_max {
            var raised = limits
            raised.rlim_cur = limits.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limits = raised }
        }
        return limits.rlim_cur == rlim_t.max ? nil : Int(clamping: limits.rlim_cur)
    }
}

/// Hummingbird's accept gate with the gateway's log line: said once each time the limit is
/// reached, so an operator sees why new clients wait.
struct ConnectionLimit: AvailableConnectionsDelegate {
    let budget: ConnectionBudget
    let logger: Logger
    private var open = 0
    private var saidFull = false

    init(budget: ConnectionBudget, logger: Logger) {
        self.budget = budget
        self.logger = logger
    }

    mutating func connectionOpened() {
        open += 1
        if open >= budget.limit, !saidFull {
            saidFull = true
            var why = "max_connections = \(budget.limit)"
            if let descriptors = budget.descriptorLimit {
                why = "the descriptor limit (ulimit -n) of \(descriptors) less \(ConnectionBudget.reserve)+ kept for the subscriptions and the log"
            }
            logger.warning("holding \(open) client connections, the most allowed (\(why)); new ones wait until one closes (idle connections close after idle_timeout). Raise [serve] max_connections or ulimit -n if these are real clients")
        }
    }

    mutating func connectionClosed() {
        open -= 1
        // Said again only once the gateway had room to spare, not on every close and reopen.
        if open < budget.limit * 9 / 10 { saidFull = false }
    }

    func isAcceptingNewConnections() -> Bool {
        open < budget.limit
    }
}
