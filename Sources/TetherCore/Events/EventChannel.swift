import Synchronization
import TetherStreaming

/// The hand-off from an adapter's producer task to the consumer of its event stream: a
/// `BatchChannel` of events. A producer hands over what one network read meant at once
/// (`send(contentsOf:)`); the consumer (`EventStream`) takes everything ready at once. Bounded:
/// a slow consumer slows the producer, and the producer slows the socket.
public final class EventChannel: Sendable {
    let batches: BatchChannel<Event>

    /// `capacity`: events that may wait before the producer waits too.
    public init(capacity: Int = 1024) {
        batches = BatchChannel(capacity: capacity)
    }

    /// A stream fed by `produce` through a channel; the producer runs in its own task and is
    /// cancelled when the consumer drops the stream.
    public static func stream(capacity: Int = 1024,
                              _ produce: @escaping @Sendable (EventChannel) async throws -> Void) -> EventStream {
        let channel = EventChannel(capacity: capacity)
        let task = Task {
            do {
                try await produce(channel)
                channel.finish()
            } catch {
                channel.finish(throwing: error)
            }
        }
        return EventStream(channel: channel, producer: task)
    }

    /// Hands events over; suspends while the channel is full. Throws `CancellationError` once
    /// the consumer is gone.
    public func send(contentsOf events: [Event]) async throws {
        try await batches.send(contentsOf: events)
    }

    public func send(_ event: Event) async throws {
        try await batches.send(contentsOf: [event])
    }

    public func finish(throwing error: (any Error)? = nil) { batches.finish(throwing: error) }

    /// The consumer is gone: wake everyone; further sends throw.
    public func cancel() { batches.cancel() }
}

/// Events on their way to a channel's consumer: an adapter gathers what one network read means
/// (`add`, which never waits) and hands it over as one batch (`flush`) at the end of that read
/// and before any I/O that could keep it waiting. One task uses it at a time.
public final class EventOutbox: Sendable {
    public let channel: EventChannel
    private let events = Mutex<[Event]>([])

    public init(channel: EventChannel) { self.channel = channel }

    /// Into an empty outbox `more` goes as it is: nothing is copied (copying retains what each
    /// event holds, and dropping `more` then releases it all again).
    public func add(_ more: [Event]) {
        events.withLock { events in
            if events.isEmpty { events = more } else { events.append(contentsOf: more) }
        }
    }

    public func add(_ event: Event) { events.withLock { $0.append(event) } }

    public func flush() async throws {
        // Handed over whole, the outbox starting again empty (keeping the capacity of an array
        // just handed over would allocate another).
        let batch = events.withLock { events -> [Event] in
            defer { events = [] }
            return events
        }
        guard !batch.isEmpty else { return }
        try await channel.send(contentsOf: batch)
    }
}
