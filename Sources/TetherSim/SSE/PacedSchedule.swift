#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Paces a benchmark stream at a fixed rate: event `i` (from 0) is due at `start + i / rate`, on
/// the continuous clock. A sender that wakes late sends every event already due at once and then
/// keeps to the schedule, so the average rate holds even when one sleep overshoots.
///
/// Events in a paced stream carry the wall-clock time they were written, `sent_ns=NS` (nanoseconds
/// since the Unix epoch, `CLOCK_REALTIME`), so a reader on the same machine can compute each
/// event's latency to the line it prints.
struct PacedSchedule: Sendable {
    let rate: Int
    let start: ContinuousClock.Instant

    init(rate: Int, start: ContinuousClock.Instant = .now) {
        self.rate = max(1, rate)
        self.start = start
    }

    /// When event `index` is due.
    func due(_ index: Int) -> ContinuousClock.Instant {
        start.advanced(by: .nanoseconds(Int64(index) * 1_000_000_000 / Int64(rate)))
    }

    /// Sleeps until event `index` is due (not at all if it already is); false when cancelled.
    func wait(for index: Int) async -> Bool {
        let due = due(index)
        if ContinuousClock.now < due {
            do { try await Task.sleep(until: due, tolerance: .zero, clock: .continuous) } catch { return false }
        }
        return !Task.isCancelled
    }

    /// How many events starting at `index` are due now (at least 1, at most `limit`): a sender
    /// that fell behind catches up in one write instead of many.
    func dueCount(from index: Int, limit: Int) -> Int {
        let now = ContinuousClock.now
        var count = 1
        while count < limit, due(index + count) <= now { count += 1 }
        return count
    }

    /// Wall-clock nanoseconds since the Unix epoch (what `sent_ns` carries).
    static func wallClockNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
