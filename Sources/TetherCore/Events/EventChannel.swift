import Synchronization

/// A bounded hand-off from an adapter's producer task to the consumer of its event stream.
///
/// `AsyncThrowingStream`'s continuation never waits, so a producer that decodes faster than
/// stdout drains would grow its buffer without bound. Here `send` suspends once `capacity`
/// events wait, so a slow consumer slows the producer, and the producer slows the socket.
public final class EventChannel: Sendable {
    private struct State {
        var buffer: [Event] = []
        var head = 0
        var blockedProducers: [(Event, CheckedContinuation<Void, any Error>)] = []
        var consumer: CheckedContinuation<Event?, any Error>?
        var ended = false
        var failure: (any Error)?
        var cancelled = false

        var count: Int { buffer.count - head }

        mutating func pop() -> Event? {
            guard head < buffer.count else { return nil }
            let event = buffer[head]
            head += 1
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            }
            return event
        }
    }

    private let state = Mutex(State())
    private let capacity: Int

    public init(capacity: Int = 64) {
        self.capacity = max(1, capacity)
    }

    /// A stream fed by `produce` through a channel; the producer runs in its own task and is
    /// cancelled when the consumer drops the stream.
    public static func stream(capacity: Int = 64,
                              _ produce: @escaping @Sendable (EventChannel) async throws -> Void) -> AsyncThrowingStream<Event, any Error> {
        let channel = EventChannel(capacity: capacity)
        let task = Task {
            do {
                try await produce(channel)
                channel.finish()
            } catch {
                channel.finish(throwing: error)
            }
        }
        let lifetime = Lifetime(channel: channel, task: task)
        return AsyncThrowingStream(unfolding: { try await lifetime.channel.next() })
    }

    /// Cancels the producer when the stream (and so this object) goes away.
    private final class Lifetime: Sendable {
        let channel: EventChannel
        let task: Task<Void, Never>
        init(channel: EventChannel, task: Task<Void, Never>) {
            self.channel = channel
            self.task = task
        }
        deinit {
            task.cancel()
            channel.cancel()
        }
    }

    /// Hands an event over; suspends while the channel is full. Throws `CancellationError` once
    /// the consumer is gone.
    public func send(_ event: Event) async throws {
        if try handOver(event, parking: nil) { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                do {
                    if try handOver(event, parking: continuation) { continuation.resume() }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// Delivers `event` if the channel takes it now (true); otherwise parks `producer`, when
    /// given, with it until the consumer makes room (false). Everything is decided under one
    /// lock: a producer that found the channel full and then parked in a second step could park
    /// after the consumer had drained the channel and gone to wait, and then both waited for
    /// each other forever (`tether events` hung under a flood).
    private func handOver(_ event: Event, parking producer: CheckedContinuation<Void, any Error>?) throws -> Bool {
        enum Step { case taken, wake(CheckedContinuation<Event?, any Error>), cancelled, full }
        let step: Step = state.withLock { state in
            if state.cancelled || state.ended { return .cancelled }
            if let consumer = state.consumer {
                state.consumer = nil
                return .wake(consumer)
            }
            if state.count < capacity {
                state.buffer.append(event)
                return .taken
            }
            if let producer { state.blockedProducers.append((event, producer)) }
            return .full
        }
        switch step {
        case .taken: return true
        case .cancelled: throw CancellationError()
        case .wake(let consumer):
            consumer.resume(returning: event)
            return true
        case .full: return false
        }
    }

    /// The next event, or nil at the end; rethrows the producer's failure.
    public func next() async throws -> Event? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Event?, any Error>) in
                enum Outcome { case event(Event, CheckedContinuation<Void, any Error>?), end, failure(any Error), wait }
                let outcome: Outcome = state.withLock { state in
                    if let event = state.pop() {
                        var released: CheckedContinuation<Void, any Error>?
                        if !state.blockedProducers.isEmpty {
                            let (waiting, producer) = state.blockedProducers.removeFirst()
                            state.buffer.append(waiting)
                            released = producer
                        }
                        return .event(event, released)
                    }
                    if !state.blockedProducers.isEmpty {
                        let (waiting, producer) = state.blockedProducers.removeFirst()
                        return .event(waiting, producer)
                    }
                    if state.cancelled { return .failure(CancellationError()) }
                    if state.ended { return state.failure.map { .failure($0) } ?? .end }
                    state.consumer = continuation
                    return .wait
                }
                switch outcome {
                case .event(let event, let producer):
                    producer?.resume()
                    continuation.resume(returning: event)
                case .end: continuation.resume(returning: nil)
                case .failure(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            self.cancel()
        }
    }

    public func finish(throwing error: (any Error)? = nil) {
        let consumer: CheckedContinuation<Event?, any Error>? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            state.failure = error
            defer { state.consumer = nil }
            return state.count == 0 ? state.consumer : nil
        }
        if let error { consumer?.resume(throwing: error) } else { consumer?.resume(returning: nil) }
    }

    /// The consumer is gone: wake everyone; further sends throw.
    public func cancel() {
        let (producers, consumer) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], CheckedContinuation<Event?, any Error>?) in
            state.cancelled = true
            let producers = state.blockedProducers.map(\.1)
            state.blockedProducers.removeAll()
            defer { state.consumer = nil }
            return (producers, state.consumer)
        }
        for producer in producers { producer.resume(throwing: CancellationError()) }
        consumer?.resume(throwing: CancellationError())
    }
}
