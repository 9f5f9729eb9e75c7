/// A one-shot event that any number of tasks can await: how a handler learns that a scripted turn
/// has emitted the events its response must follow (reordered mode) or has finished.
final class CodexMonitorSignal: Sendable {
    private struct State {
        var fired = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Locked(State())

    func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    var isFired: Bool {
        state.withLock { $0.fired }
    }

    /// Returns once `fire()` has run (at once if it already has), or early when the task is
    /// cancelled; check `isFired` if the difference matters.
    func wait() async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
