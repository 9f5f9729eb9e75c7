import Dispatch
import Synchronization

/// The one bounded hand-off every stream in Tether uses: from a producer (a network thread, or
/// an adapter's task) to one consumer, in batches.
///
/// - The producer hands over everything it decoded from one network read at once
///   (`send(contentsOf:)`); the consumer takes everything that is ready at once (`next()`). One
///   wake-up per batch instead of one per element: that is where the time went when each event
///   crossed on its own (futex wake-ups, task switches).
/// - Bounded: once `capacity` elements wait, a producer waits too — an async task suspends
///   (`send`), a plain thread blocks (`sendBlocking`) — until the consumer takes them. A batch is
///   taken whole while there is room, so at most `capacity - 1` plus one batch wait.
/// - Live: nothing is held back; a consumer that asks gets what is there, or waits for the next
///   batch.
/// - One lock decides every step, so a producer can never park after the consumer drained the
///   buffer and went to wait (the deadlock an earlier two-step hand-off had).
/// - Cancellation (the consumer is gone) wakes everyone: sends throw `CancellationError`, a
///   blocked thread returns `false`.
public final class BatchChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var consumer: CheckedContinuation<[Element]?, any Error>?
        var parkedTasks: [CheckedContinuation<Void, any Error>] = []
        var parkedThreads: [DispatchSemaphore] = []
        var ended = false
        var failure: (any Error)?
        var cancelled = false

        /// Producers to wake once the consumer has taken the buffer.
        mutating func takeParked() -> ([CheckedContinuation<Void, any Error>], [DispatchSemaphore]) {
            defer {
                parkedTasks.removeAll()
                parkedThreads.removeAll()
            }
            return (parkedTasks, parkedThreads)
        }
    }

    private enum Offer {
        case taken
        case handed(CheckedContinuation<[Element]?, any Error>)
        case full
        case closed
    }

    private enum Take {
        case batch([Element], [CheckedContinuation<Void, any Error>], [DispatchSemaphore])
        case end(Result<[Element]?, any Error>)
        case wait
    }

    private enum Room { case park, retry, closed }

    private let state = Mutex(State())
    /// How many elements may wait before producers wait too.
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    // MARK: Producer

    /// Hands `batch` over, suspending while the channel is full. Throws `CancellationError` once
    /// the consumer is gone or the channel was finished.
    public func send(contentsOf batch: [Element]) async throws {
        guard !batch.isEmpty else { return }
        while true {
            switch offer(batch) {
            case .taken: return
            case .handed(let consumer):
                consumer.resume(returning: batch)
                return
            case .closed: throw CancellationError()
            case .full: try await waitForRoom()
            }
        }
    }

    public func send(_ element: Element) async throws {
        try await send(contentsOf: [element])
    }

    /// `send` for a plain thread (libcurl's transfer thread, a socket's reader): blocks while
    /// the channel is full. Returns false once the consumer is gone or the channel was finished.
    @discardableResult
    public func sendBlocking(contentsOf batch: [Element]) -> Bool {
        guard !batch.isEmpty else { return true }
        while true {
            switch offer(batch) {
            case .taken: return true
            case .handed(let consumer):
                consumer.resume(returning: batch)
                return true
            case .closed: return false
            case .full:
                let room = DispatchSemaphore(value: 0)
                let parked: Bool = state.withLock { state in
                    if state.cancelled || state.ended || state.buffer.count < capacity { return false }
                    state.parkedThreads.append(room)
                    return true
                }
                if parked { room.wait() }
            }
        }
    }

    /// No more elements: the consumer gets what is buffered, then the end (or `error`).
    public func finish(throwing error: (any Error)? = nil) {
        var consumer: CheckedContinuation<[Element]?, any Error>?
        var parked: ([CheckedContinuation<Void, any Error>], [DispatchSemaphore]) = ([], [])
        state.withLock { state in
            guard !state.ended else { return }
            state.ended = true
            state.failure = error
            parked = state.takeParked()
            if state.buffer.isEmpty { consumer = state.consumer }
            state.consumer = nil
        }
        for task in parked.0 { task.resume(throwing: CancellationError()) }
        for thread in parked.1 { thread.signal() }
        if let error { consumer?.resume(throwing: error) } else { consumer?.resume(returning: nil) }
    }

    /// The consumer is gone: wake everyone; later sends fail.
    public func cancel() {
        let (consumer, tasks, threads) = state.withLock { state in
            state.cancelled = true
            let (tasks, threads) = state.takeParked()
            defer { state.consumer = nil }
            return (state.consumer, tasks, threads)
        }
        for task in tasks { task.resume(throwing: CancellationError()) }
        for thread in threads { thread.signal() }
        consumer?.resume(throwing: CancellationError())
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    // MARK: Consumer

    /// Everything buffered, oldest first, waiting for the next batch when there is none; nil
    /// at the end. Rethrows the producer's failure; throws `CancellationError` after `cancel`.
    public func next() async throws -> [Element]? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Element]?, any Error>) in
                let outcome: Take = state.withLock { state in
                    if state.cancelled { return .end(.failure(CancellationError())) }
                    if !state.buffer.isEmpty {
                        let batch = state.buffer
                        state.buffer = []
                        state.buffer.reserveCapacity(min(batch.count, capacity))
                        let (tasks, threads) = state.takeParked()
                        return .batch(batch, tasks, threads)
                    }
                    if state.ended { return .end(state.failure.map { .failure($0) } ?? .success(nil)) }
                    state.consumer = continuation
                    return .wait
                }
                switch outcome {
                case .batch(let batch, let tasks, let threads):
                    for task in tasks { task.resume() }
                    for thread in threads { thread.signal() }
                    continuation.resume(returning: batch)
                case .end(let result): continuation.resume(with: result)
                case .wait: break
                }
            }
        } onCancel: {
            self.cancel()
        }
    }

    // MARK: Steps (each under the lock once)

    private func offer(_ batch: [Element]) -> Offer {
        state.withLock { state in
            if state.cancelled || state.ended { return .closed }
            if let consumer = state.consumer {
                state.consumer = nil
                return .handed(consumer)
            }
            guard state.buffer.count < capacity else { return .full }
            if state.buffer.isEmpty { state.buffer = batch } else { state.buffer.append(contentsOf: batch) }
            return .taken
        }
    }

    private func waitForRoom() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let decision: Room = state.withLock { state in
                    if state.cancelled || state.ended { return .closed }
                    if state.buffer.count < capacity { return .retry }
                    state.parkedTasks.append(continuation)
                    return .park
                }
                switch decision {
                case .park: break
                case .retry: continuation.resume()
                case .closed: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            self.cancel()
        }
    }
}
