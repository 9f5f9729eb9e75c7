/// A backend's normalized events. Iterate it for one event at a time, or `batches` for
/// everything that is ready at once (what one network read meant): a consumer that writes a
/// batch with one `write(2)` stays live and is not slowed by one system call a line.
///
/// Dropping the stream (or cancelling its consumer) cancels the producer.
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = Event

    private let source: Source

    init(channel: EventChannel, producer: Task<Void, Never>) {
        source = Source(channel: channel, producer: producer)
    }

    /// Wraps a stream of single events (test doubles, simple backends).
    public init(_ events: AsyncThrowingStream<Event, any Error>) {
        self = EventChannel.stream { channel in
            for try await event in events { try await channel.send(event) }
        }
    }

    /// A stream that produces `events`, then ends.
    public init(_ events: [Event]) {
        self = EventChannel.stream { channel in try await channel.send(contentsOf: events) }
    }

    /// Everything that is ready, oldest first, waiting when nothing is; nil at the end.
    public func nextBatch() async throws -> [Event]? {
        try await source.channel.batches.next()
    }

    public var batches: Batches { Batches(stream: self) }

    public func makeAsyncIterator() -> Iterator { Iterator(stream: self) }

    public struct Iterator: AsyncIteratorProtocol {
        let stream: EventStream
        private var buffered: [Event] = []
        private var index = 0

        init(stream: EventStream) { self.stream = stream }

        public mutating func next() async throws -> Event? {
            if index == buffered.count {
                guard let batch = try await stream.nextBatch() else { return nil }
                buffered = batch
                index = 0
            }
            defer { index += 1 }
            return buffered[index]
        }
    }

    /// The stream as batches (never empty).
    public struct Batches: AsyncSequence, Sendable {
        public typealias Element = [Event]
        let stream: EventStream

        public func makeAsyncIterator() -> Iterator { Iterator(stream: stream) }

        public struct Iterator: AsyncIteratorProtocol {
            let stream: EventStream
            public mutating func next() async throws -> [Event]? { try await stream.nextBatch() }
        }
    }

    /// Cancels the producer when the last copy of the stream goes away.
    private final class Source: Sendable {
        let channel: EventChannel
        let producer: Task<Void, Never>

        init(channel: EventChannel, producer: Task<Void, Never>) {
            self.channel = channel
            self.producer = producer
        }

        deinit {
            producer.cancel()
            channel.cancel()
        }
    }
}
