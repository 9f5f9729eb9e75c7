import Foundation
import Logging

/// Trims events older than `retain_days` in the background: once shortly after start, then
/// every hour.
struct RetentionSchedule: Sendable {
    let log: any EventStore
    let retainDays: Double
    let logger: Logger
    var firstRun: Duration = .seconds(5)
    var interval: Duration = .seconds(3600)

    func run() async {
        var wait = firstRun
        while true {
            do { try await Task.sleep(for: wait) } catch { return }
            await trimOnce()
            wait = interval
        }
    }

    func trimOnce() async {
        let cutoff = Date().timeIntervalSince1970 * 1000 - retainDays * 86_400_000
        do {
            let deleted = try await log.trim(olderThan: cutoff)
            if deleted > 0 { logger.info("retention trimmed the event log", metadata: ["deleted": "\(deleted)", "retain_days": "\(retainDays)"]) }
        } catch {
            logger.error("retention could not trim the event log", metadata: ["error": "\(error)"])
        }
    }
}
