import FlyingSocks
import Foundation

/// A pipe from a simulator to one streaming HTTP response body.
///
/// FlyingFox sends a body of unknown length with chunked transfer encoding, writing each buffer its
/// body sequence yields straight to the socket (`HTTPBodySequence(from:)`). This pipe's iterator
/// yields each chunk written by the producer as one buffer, so every SSE frame leaves the server in
/// its own `send(2)` as soon as it is written: nothing waits for a buffer to fill.
///
/// The producer side never blocks (`send`) or waits for room (`write`, for floods). Ending is
/// explicit: `finish()` ends the body cleanly (the terminating zero chunk), `abort()` ends it
/// abruptly (the iterator throws, FlyingFox closes the socket mid-body, the client sees a
/// truncated response); both deliver what was already written first.
final class StreamingBody: Sendable {
    enum Ending: Sendable {
        case finished
        case aborted
    }

    struct Aborted: Error {}

    /// Bytes buffered above which `write` waits for the client to read.
    static let highWater = 256 * 1024

    private struct State {
        var chunks: [Data] = []
        var head = 0
        var buffered = 0
        var ending: Ending?
        var cancelled = false
        var terminated = false
        var consumer: CheckedContinuation<Void, any Error>?
        var producer: CheckedContinuation<Void, Never>?
        var onTermination: [@Sendable () -> Void] = []

        var hasChunk: Bool { head < chunks.count }

        mutating func popChunk(max: Int) -> Data {
            let chunk = chunks[head]
            if chunk.count > max {
                let prefix = chunk.prefix(max)
                chunks[head] = chunk.dropFirst(max)
                buffered -= prefix.count
                return Data(prefix)
            }
            head += 1
            if head > 64, head * 2 > chunks.count {
                chunks.removeFirst(head)
                head = 0
            }
            buffered -= chunk.count
            return chunk
        }

        /// Marks the pipe dead and hands back what must be resumed or called outside the lock.
        mutating func terminate() -> (CheckedContinuation<Void, Never>?, [@Sendable () -> Void]) {
            guard !terminated else { return (nil, []) }
            terminated = true
            if ending == nil { ending = .aborted }
            chunks = []
            head = 0
            buffered = 0
            let producer = self.producer
            self.producer = nil
            let callbacks = onTermination
            onTermination = []
            return (producer, callbacks)
        }
    }

    private let state = Locked(State())
    /// Largest buffer handed to the socket at once; 1 with a per-byte delay for "drip" faults.
    private let maxChunk: Int
    private let chunkDelay: Duration

    init(maxChunk: Int = .max, chunkDelay: Duration = .zero) {
        self.maxChunk = max(1, maxChunk)
        self.chunkDelay = chunkDelay
    }

    /// Adds a callback run once when the body is over: ended and drained, or the client went away.
    func onTermination(_ callback: @escaping @Sendable () -> Void) {
        let callNow = state.withLock { state -> Bool in
            if state.terminated { return true }
            state.onTermination.append(callback)
            return false
        }
        if callNow { callback() }
    }

    var isOpen: Bool {
        state.withLock { $0.ending == nil && !$0.terminated }
    }

    /// Appends one chunk without waiting. Returns false once the body is over.
    @discardableResult
    func send(_ data: Data) -> Bool {
        guard !data.isEmpty else { return isOpen }
        let consumer = state.withLock { state -> CheckedContinuation<Void, any Error>?? in
            guard state.ending == nil, !state.terminated else { return .none }
            state.chunks.append(data)
            state.buffered += data.count
            let consumer = state.consumer
            state.consumer = nil
            return .some(consumer)
        }
        guard let consumer else { return false }
        consumer?.resume()
        return true
    }

    /// Appends one chunk, first waiting while more than `highWater` bytes are unread.
    /// Returns false once the body is over.
    func write(_ data: Data) async -> Bool {
        while true {
            enum Step { case closed, room, wait }
            let step = state.withLock { state -> Step in
                if state.ending != nil || state.terminated { return .closed }
                return state.buffered <= Self.highWater ? .room : .wait
            }
            switch step {
            case .closed:
                return false
            case .room:
                return send(data)
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.ending != nil || state.terminated || state.buffered <= Self.highWater { return true }
                        state.producer = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// Ends the body cleanly once what was written has been sent.
    func finish() { end(.finished) }

    /// Ends the body abruptly (connection closed mid-body) once what was written has been sent.
    func abort() { end(.aborted) }

    private func end(_ ending: Ending) {
        let (consumer, producer) = state.withLock { state -> (CheckedContinuation<Void, any Error>?, CheckedContinuation<Void, Never>?) in
            guard state.ending == nil, !state.terminated else { return (nil, nil) }
            state.ending = ending
            defer { state.consumer = nil; state.producer = nil }
            return (state.consumer, state.producer)
        }
        consumer?.resume()
        producer?.resume()
    }

    // MARK: Consumer side

    fileprivate func next(suggested count: Int) async throws -> Data? {
        if chunkDelay > .zero {
            try await Task.sleep(for: chunkDelay)
        }
        let limit = min(max(1, count), maxChunk)
        while true {
            enum Step { case chunk(Data, CheckedContinuation<Void, Never>?), end(Ending), wait }
            let step = state.withLock { state -> Step in
                if state.cancelled { return .end(.aborted) }
                if state.hasChunk {
                    let chunk = state.popChunk(max: limit)
                    var producer: CheckedContinuation<Void, Never>?
                    if state.buffered <= Self.highWater {
                        producer = state.producer
                        state.producer = nil
                    }
                    return .chunk(chunk, producer)
                }
                if let ending = state.ending { return .end(ending) }
                return .wait
            }
            switch step {
            case .chunk(let chunk, let producer):
                producer?.resume()
                return chunk
            case .end(let ending):
                consumerGone()
                if ending == .finished { return nil }
                throw Aborted()
            case .wait:
                try await waitForChunk()
            }
        }
    }

    private func waitForChunk() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.cancelled || state.hasChunk || state.ending != nil { return true }
                    state.consumer = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let consumer = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                state.cancelled = true
                defer { state.consumer = nil }
                return state.consumer
            }
            consumer?.resume(throwing: CancellationError())
        }
    }

    /// The response is over for the client: ended, failed to write, or the server cancelled it.
    fileprivate func consumerGone() {
        let (producer, callbacks) = state.withLock { $0.terminate() }
        producer?.resume()
        for callback in callbacks { callback() }
    }
}

// MARK: - FlyingSocks body sequence

extension StreamingBody {
    /// The sequence FlyingFox's `HTTPBodySequence(from:)` iterates to send the body.
    var bytes: Bytes { Bytes(body: self) }

    struct Bytes: AsyncBufferedSequence, Sendable {
        typealias Element = UInt8
        let body: StreamingBody

        func makeAsyncIterator() -> Iterator {
            Iterator(body: body, lease: Lease(body: body))
        }
    }

    /// Notices when FlyingFox drops the iterator: after the last chunk, or when a socket write
    /// failed because the client went away (FlyingFox then stops iterating without telling us).
    final class Lease: Sendable {
        let body: StreamingBody
        init(body: StreamingBody) { self.body = body }
        deinit { body.consumerGone() }
    }

    struct Iterator: AsyncBufferedIteratorProtocol {
        typealias Element = UInt8
        typealias Buffer = Data
        let body: StreamingBody
        let lease: Lease
        private var pending = Data()

        init(body: StreamingBody, lease: Lease) {
            self.body = body
            self.lease = lease
        }

        mutating func next() async throws -> UInt8? {
            if pending.isEmpty {
                guard let chunk = try await body.next(suggested: 4096) else { return nil }
                pending = chunk
            }
            return pending.popFirst()
        }

        mutating func nextBuffer(suggested count: Int) async throws -> Data? {
            if !pending.isEmpty {
                defer { pending = Data() }
                return pending
            }
            return try await body.next(suggested: count)
        }
    }
}
