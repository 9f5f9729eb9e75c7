/// Where the first answer to a server→client request lands, whether it comes before or after
/// the turn starts waiting for it. A cancelled wait (the turn was interrupted) reads nil.
final class AnswerBox: Sendable {
    private struct Slot {
        /// nil: no answer yet; `.some(nil)`: the wait was cancelled.
        var answer: OrderedJSON??
        var waiter: CheckedContinuation<OrderedJSON?, Never>?
    }

    private let slot = Locked(Slot())

    func deliver(_ answer: OrderedJSON?) {
        let waiter = slot.withLock { slot -> CheckedContinuation<OrderedJSON?, Never>? in
            guard slot.answer == nil else { return nil }
            slot.answer = .some(answer)
            defer { slot.waiter = nil }
            return slot.waiter
        }
        waiter?.resume(returning: answer)
    }

    /// The answer; nil once the task is cancelled.
    func wait() async -> OrderedJSON? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<OrderedJSON?, Never>) in
                let ready = slot.withLock { slot -> OrderedJSON?? in
                    if let answer = slot.answer { return .some(answer) }
                    if Task.isCancelled {
                        slot.answer = .some(nil)
                        return .some(nil)
                    }
                    slot.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            deliver(nil)
        }
    }
}
