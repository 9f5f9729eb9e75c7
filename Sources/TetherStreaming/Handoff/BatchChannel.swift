import Dispatch
import Synchronization

/// The one bounded hand-off every stream in Tether uses: from a producer (a network thread, or
/// an adapter's task) to one consumer, in batches.
///
/// - The producer hands over everything it decoded from one network read at once
///   (`send(contentsOf:)`); the consumer takes everything that is ready at once (`next()`). One
///   wake-up per batch instead of one per element: that is where the time went when each event
///   crossed on its own (futex wake-ups, task switches).
/// - Bounded: once `capacity` elements wait (or batches weighing that much, when senders give
///   each batch a weight — its bytes, say), a producer waits too — an async task suspends
///   (`send`), a plain thread blocks (`sendBlocking`) — until the consumer takes them. A batch is
///   taken whole while there is room, so at most `capacity - 1` plus one batch wait. A thread
///   that must not block (a socket's I/O thread, which also writes) offers with `trySend` and is
///   called back when there is room again.
/// - Live: nothing is held back; a consumer that asks gets what is there, or waits for the next
///   batch.
/// - One lock decides every step, so a producer can never park after the consumer drained the
///   buffer and went to wait (the deadlock an earlier two-step hand-off had).
/// - Cancellation (the consumer is gone) wakes everyone: sends throw `CancellationError`, a
///   blocked thread returns `false`. A consumer that may give up one wait and come back (a
///   connection's `receive()`) waits with `next(cancellation: .endsWaitOnly)` instead.
/// - Lossy when it must be: a producer that may not always wait (a connection's reader while
///   a call's response is still to come, behind what fills the channel) sends with
///   `send(contentsOf:weight:mayWait:overfill:)`. What it cannot place is dropped and counted,
///   and a consumer that takes with `next(timeout:)` learns how many elements it lost.
public final class BatchChannel<Element: Sendable>: Sendable {
    /// What a consumer waiting with `next(timeout:)` receives.
    public enum Received: Sendable {
        /// Everything buffered, oldest first; `lost` elements were dropped after these, in the
        /// order they came (once a lossy send drops one, it places no other until the consumer is told).
        case batch([Element], lost: Int)
        case timedOut
        /// The producer finished (one that failed makes `next` throw its error).
        case ended
    }

    /// The waiting consumer: `token` tells one wait from the next, for a timer that fires late.
    private struct Consumer {
        var token: Int
        var continuation: CheckedContinuation<Received, any Error>
    }

    private struct State {
        var buffer: [Element] = []
        /// What `buffer` weighs (the weights its batches were sent with, or their counts).
        var weight = 0
        /// Elements dropped since the consumer last took (`send(…mayWait:overfill:)`).
        var lost = 0
        /// The batches `buffer` holds, oldest first: how many elements each is and what it
        /// weighs (for a take bounded by weight, `next(timeout:weighingAtMost:)`).
        var sent: [(count: Int, weight: Int)] = []

        mutating func buffer(_ batch: [Element], weight: Int) {
            if buffer.isEmpty { buffer = batch } else { buffer.append(contentsOf: batch) }
            self.weight += weight
            sent.append((batch.count, weight))
        }

        /// The oldest batches, whole, up to `limit` of weight (at least one); everything when
        /// that is all or no limit is given. What was lost is handed over with the last of it.
        mutating func take(weighingAtMost limit: Int?) -> Received {
            if let limit, weight > limit, sent.count > 1 {
                var batches = 0, count = 0, taken = 0
                while batches < sent.count, batches == 0 || taken + sent[batches].weight <= limit {
                    count += sent[batches].count
                    taken += sent[batches].weight
                    batches += 1
                }
                if batches < sent.count {
                    let front = Array(buffer[..<count])
                    buffer.removeFirst(count)
                    sent.removeFirst(batches)
                    weight -= taken
                    return .batch(front, lost: 0)
                }
            }
            defer {
                buffer = []
                weight = 0
                lost = 0
                sent.removeAll(keepingCapacity: true)
            }
            return .batch(buffer, lost: lost)
        }
        var consumer: Consumer?
        var consumerTokens = 0
        /// How often `rouseProducers()` was called: a lossy producer that asked `mayWait` before
        /// the latest rouse asks again instead of parking.
        var rouses = 0
        var parkedTasks: [CheckedContinuation<Void, any Error>] = []
        var parkedThreads: [DispatchSemaphore] = []
        /// `trySend`'s producers that found the channel full, to call once there is room.
        var roomCallbacks: [@Sendable () -> Void] = []
        var ended = false
        var failure: (any Error)?
        var cancelled = false

        /// Producers to wake once the consumer has taken the buffer.
        mutating func takeParked() -> Parked {
            defer {
                parkedTasks.removeAll()
                parkedThreads.removeAll()
                roomCallbacks.removeAll()
            }
            return Parked(tasks: parkedTasks, threads: parkedThreads, callbacks: roomCallbacks)
        }
    }

    /// Producers waiting for room, taken under the lock and woken outside it.
    private struct Parked {
        var tasks: [CheckedContinuation<Void, any Error>] = []
        var threads: [DispatchSemaphore] = []
        var callbacks: [@Sendable () -> Void] = []

        /// There is room (or the channel closed): each producer offers again.
        func wake(throwing error: (any Error)? = nil) {
            for task in tasks {
                if let error { task.resume(throwing: error) } else { task.resume() }
            }
            for thread in threads { thread.signal() }
            for callback in callbacks { callback() }
        }
    }

    /// What `trySend` did with a batch.
    public enum TrySendOutcome: Sendable, Equatable {
        /// Taken (buffered, or handed to the waiting consumer).
        case accepted
        /// Not taken: the channel is full. `onRoom` will be called.
        case full
        /// Not taken, and nothing ever will be: the consumer is gone or the channel was finished.
        case closed
    }

    private enum Offer {
        case taken
        case handed(CheckedContinuation<Received, any Error>)
        case full
        case closed
    }

    private enum Take {
        case batch(Received, Parked)
        case end(Result<Received, any Error>)
        case wait
    }

    private enum Room { case park, retry, closed }

    /// What a lossy send does with its batch, decided under the lock.
    private enum LossyStep {
        case offered(Offer)
        case dropped
        case park
    }

    private let state = Mutex(State())
    /// How many elements (or how much weight) may wait before producers wait too.
    public let capacity: Int

    /// - Parameter capacity: how much may wait before producers wait too: elements, or the
    ///   total weight senders give their batches (`weight:` on every send, the same unit each time).
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// What waits for the consumer now: elements, or their weight. For measurements.
    public var bufferedWeight: Int { state.withLock { $0.weight } }

    /// What a consumer that gives up waiting (its task is cancelled) does to the channel.
    public enum ConsumerCancellation: Sendable {
        /// The consumer is gone for good: the channel is cancelled (producers fail).
        case cancelsChannel
        /// Only this wait ends (with `CancellationError`); the channel and what it holds stay
        /// for the next `next()`. Nothing is lost: a batch already handed over is returned.
        case endsWaitOnly
    }

    // MARK: Producer

    /// Hands `batch` over, suspending while the channel is full. Throws `CancellationError` once
    /// the consumer is gone or the channel was finished. `weight`: what the batch weighs against
    /// the capacity (its bytes, say), known to the producer that made it; nil: its count.
    public func send(contentsOf batch: [Element], weight: Int? = nil) async throws {
        guard !batch.isEmpty else { return }
        let weight = weight ?? batch.count
        while true {
            switch offer(batch, weight: weight) {
            case .taken: return
            case .handed(let consumer):
                consumer.resume(returning: .batch(batch, lost: 0))
                return
            case .closed: throw CancellationError()
            case .full: try await waitForRoom()
            }
        }
    }

    /// What a lossy `send` did with its batch.
    public enum LossySendOutcome: Sendable, Equatable {
        /// Buffered, or handed to the waiting consumer.
        case accepted
        /// Dropped, and counted for the consumer.
        case dropped
    }

    /// `send` for a producer that may not always wait: a connection's reader while a call waits
    /// for its response, which comes behind what fills the channel. While `mayWait()` says so
    /// it waits for room like `send`; otherwise a full channel takes batches until it holds
    /// `overfill` (in the same unit as the capacity), and drops the rest, counted for a
    /// consumer that takes with `next(timeout:)` (`Received.batch(_:lost:)`). Once it drops a
    /// batch it takes no other until the consumer has been told (with the last of what is
    /// buffered: a take in parts tells it last): it drops them while it may not wait, and
    /// waits otherwise. So what was lost came after everything taken before the consumer is
    /// told, and before everything after. A producer waiting for room asks `mayWait()` again when
    /// `rouseProducers()` is called (the producer's owner calls it as a call starts).
    /// `count`: what the batch counts as when it is dropped (what its elements hold, when one
    /// element stands for many); nil: its elements.
    @discardableResult
    public func send(contentsOf batch: [Element], weight: Int? = nil, count: Int? = nil, mayWait: () -> Bool,
                     overfill: Int = 0) async throws -> LossySendOutcome {
        guard !batch.isEmpty else { return .accepted }
        let weight = weight ?? batch.count
        while true {
            let rouses = state.withLock { $0.rouses }  // before asking: a rouse after it is seen below
            let waits = mayWait()
            let step: LossyStep = state.withLock { state in
                if state.lost == 0 || state.cancelled || state.ended {
                    let offered = offer(batch, weight: weight, &state)
                    guard case .full = offered else { return .offered(offered) }
                }
                // Waiting also when something was dropped: what comes later then follows the loss.
                if waits { return state.rouses == rouses ? .park : .offered(.full) }
                if state.lost == 0, state.weight < max(overfill, capacity) {
                    state.buffer(batch, weight: weight)
                    return .offered(.taken)
                }
                state.lost += max(1, count ?? batch.count)  // never 0: a count is what keeps later batches out
                return .dropped
            }
            switch step {
            case .offered(.taken): return .accepted
            case .offered(.handed(let consumer)):
                consumer.resume(returning: .batch(batch, lost: 0))
                return .accepted
            case .offered(.closed): throw CancellationError()
            case .offered(.full): continue  // roused meanwhile: ask again
            case .dropped: return .dropped
            case .park: try await waitForRoom(unlessRousedSince: rouses)
            }
        }
    }

    /// How many producer tasks are parked waiting for room: for tests that must know a producer
    /// waits before they act, rather than guess with a sleep.
    package var parkedProducers: Int { state.withLock { $0.parkedTasks.count } }

    /// Wakes producers waiting for room, so that lossy ones ask `mayWait()` again.
    public func rouseProducers() {
        let parked = state.withLock { state in
            state.rouses += 1
            return state.takeParked()
        }
        parked.wake()
    }

    public func send(_ element: Element) async throws {
        try await send(contentsOf: [element])
    }

    /// `send` for a plain thread (libcurl's transfer thread, a socket's reader): blocks while
    /// the channel is full. Returns false once the consumer is gone or the channel was finished.
    @discardableResult
    public func sendBlocking(contentsOf batch: [Element], weight: Int? = nil) -> Bool {
        guard !batch.isEmpty else { return true }
        let weight = weight ?? batch.count
        while true {
            switch offer(batch, weight: weight) {
            case .taken: return true
            case .handed(let consumer):
                consumer.resume(returning: .batch(batch, lost: 0))
                return true
            case .closed: return false
            case .full:
                let room = DispatchSemaphore(value: 0)
                let parked: Bool = state.withLock { state in
                    if state.cancelled || state.ended || state.weight < capacity { return false }
                    state.parkedThreads.append(room)
                    return true
                }
                if parked { room.wait() }
            }
        }
    }

    /// Hands `batch` over if the channel has room now, never waiting: for a producer that has
    /// other work and cannot block (a socket's I/O thread, which also writes). On `.full`
    /// nothing was taken, and `onRoom` was registered in the same step (under the lock) that
    /// found the channel full, so a consumer that drains right after cannot slip between the two:
    /// it is called once, outside the lock, when the consumer takes a batch — or when the channel
    /// is finished or cancelled (the next offer then says `.closed`). It must not block; it
    /// typically wakes the producer, which offers again. On `.accepted` and `.closed` it is
    /// dropped uncalled.
    public func trySend(contentsOf batch: [Element], weight: Int? = nil, onRoom: @escaping @Sendable () -> Void) -> TrySendOutcome {
        guard !batch.isEmpty else { return .accepted }
        let weight = weight ?? batch.count
        let offered: Offer = state.withLock { state in
            let offered = offer(batch, weight: weight, &state)
            if case .full = offered { state.roomCallbacks.append(onRoom) }
            return offered
        }
        switch offered {
        case .taken: return .accepted
        case .handed(let consumer):
            consumer.resume(returning: .batch(batch, lost: 0))
            return .accepted
        case .full: return .full
        case .closed: return .closed
        }
    }

    /// Whether an offer would be taken now, for a producer thread that reads only what it can
    /// hand over (with one producer, a `trySend` right after `true` is accepted: only the
    /// consumer changes the buffer meanwhile, and it only empties it). When not, `onRoom` is
    /// registered in the same step, exactly as by a `trySend` that found the channel full.
    /// A closed channel has room: offers there say `.closed`.
    public func hasRoom(orCall onRoom: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if state.cancelled || state.ended || state.consumer != nil || state.weight < capacity { return true }
            state.roomCallbacks.append(onRoom)
            return false
        }
    }

    /// No more elements: the consumer gets what is buffered, then the end (or `error`).
    public func finish(throwing error: (any Error)? = nil) {
        var consumer: CheckedContinuation<Received, any Error>?
        var parked = Parked()
        state.withLock { state in
            guard !state.ended else { return }
            state.ended = true
            state.failure = error
            parked = state.takeParked()
            if state.buffer.isEmpty { consumer = state.consumer?.continuation }
            state.consumer = nil
        }
        parked.wake(throwing: CancellationError())
        if let error { consumer?.resume(throwing: error) } else { consumer?.resume(returning: .ended) }
    }

    /// The consumer is gone: wake everyone; later sends fail.
    public func cancel() {
        let (consumer, parked) = state.withLock { state in
            state.cancelled = true
            let parked = state.takeParked()
            defer { state.consumer = nil }
            return (state.consumer?.continuation, parked)
        }
        parked.wake(throwing: CancellationError())
        consumer?.resume(throwing: CancellationError())
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    // MARK: Consumer

    /// Everything buffered, oldest first, waiting for the next batch when there is none; nil
    /// at the end. Rethrows the producer's failure; throws `CancellationError` after `cancel`,
    /// or when the waiting task is cancelled (which, by default, cancels the channel too).
    /// Elements a lossy send dropped are not counted here: such a channel is read with
    /// `next(timeout:)`.
    public func next(cancellation: ConsumerCancellation = .cancelsChannel) async throws -> [Element]? {
        switch try await take(timeout: nil, limit: nil, cancellation: cancellation) {
        case .batch(let batch, _): batch
        case .ended, .timedOut: nil
        }
    }

    /// Everything buffered and how many elements were dropped after it, waiting up to
    /// `timeout` (nil: for ever; zero: only what is there) when there is none. Nothing is lost
    /// to the timeout: a batch is handed over or left buffered, never both. Rethrows the
    /// producer's failure; a cancelled wait throws `CancellationError` and leaves the channel
    /// as it was (`ConsumerCancellation.endsWaitOnly`).
    /// `limit`: take at most this weight of the oldest batches (always one at least), leaving
    /// the rest buffered — for a consumer that works through a backlog a part at a time, so
    /// that the producer does not decode ahead of it meanwhile; nil: everything.
    public func next(timeout: Duration?, weighingAtMost limit: Int? = nil) async throws -> Received {
        try await take(timeout: timeout, limit: limit, cancellation: .endsWaitOnly)
    }

    private func take(timeout: Duration?, limit: Int?, cancellation: ConsumerCancellation) async throws -> Received {
        let token = state.withLock { state in
            state.consumerTokens += 1
            return state.consumerTokens
        }
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Received, any Error>) in
                let outcome: Take = state.withLock { state in
                    if state.cancelled { return .end(.failure(CancellationError())) }
                    if !state.buffer.isEmpty || state.lost > 0 {
                        // Handed over whole (the next offer to an empty buffer becomes it, so
                        // nothing is reserved here), or its oldest batches up to `limit`.
                        return .batch(state.take(weighingAtMost: limit), state.takeParked())
                    }
                    if state.ended { return .end(state.failure.map { .failure($0) } ?? .success(.ended)) }
                    // Checked under the lock: a cancellation handler that ran first found no wait to end.
                    if cancellation == .endsWaitOnly, Task.isCancelled { return .end(.failure(CancellationError())) }
                    if let timeout, timeout <= .zero { return .end(.success(.timedOut)) }
                    state.consumer = Consumer(token: token, continuation: continuation)
                    return .wait
                }
                switch outcome {
                case .batch(let batch, let parked):
                    parked.wake()
                    continuation.resume(returning: batch)
                case .end(let result): continuation.resume(with: result)
                case .wait:
                    // Armed once the wait is registered: a timer that fires now finds it.
                    timer = timeout.map { timeout in
                        Task {
                            try? await Task.sleep(for: timeout)
                            self.endWait(token: token, with: .success(.timedOut))
                        }
                    }
                }
            }
        } onCancel: {
            switch cancellation {
            case .cancelsChannel: self.cancel()
            case .endsWaitOnly: self.endWait(token: token, with: .failure(CancellationError()))
            }
        }
    }

    /// Ends the wait `token` if it is still the one waiting (a producer that already took the
    /// continuation resumes it with its batch).
    private func endWait(token: Int, with result: Result<Received, any Error>) {
        let waiting = state.withLock { state -> CheckedContinuation<Received, any Error>? in
            guard let consumer = state.consumer, consumer.token == token else { return nil }
            state.consumer = nil
            return consumer.continuation
        }
        waiting?.resume(with: result)
    }

    // MARK: Steps (each under the lock once)

    private func offer(_ batch: [Element], weight: Int) -> Offer {
        state.withLock { offer(batch, weight: weight, &$0) }
    }

    private func offer(_ batch: [Element], weight: Int, _ state: inout State) -> Offer {
        if state.cancelled || state.ended { return .closed }
        if let consumer = state.consumer {
            state.consumer = nil
            return .handed(consumer.continuation)
        }
        guard state.weight < capacity else { return .full }
        state.buffer(batch, weight: weight)
        return .taken
    }


    /// Parks the producer until the consumer takes, the channel closes, or (`rouses` given)
    /// `rouseProducers()` is called — or has been since the producer read `rouses`.
    private func waitForRoom(unlessRousedSince rouses: Int? = nil) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let decision: Room = state.withLock { state in
                    if state.cancelled || state.ended { return .closed }
                    // Room, and nothing dropped still to be told (a take in parts tells it last).
                    if state.weight < capacity, state.lost == 0 { return .retry }
                    if let rouses, state.rouses != rouses { return .retry }
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
