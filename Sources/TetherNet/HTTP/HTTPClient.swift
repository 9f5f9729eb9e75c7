import Foundation
import Logging
import Synchronization

/// HTTP over libcurl: request/response for REST calls, and long-lived streams for SSE.
/// Each transfer runs on its own thread with its own curl handle, so a handle is never used
/// from two threads, and a blocking transfer never occupies Swift's cooperative pool.
public struct HTTPClient: Sendable {
    public var logger: Logger
    /// Responses larger than this fail (a REST body, not a stream).
    public var maxResponseBytes: Int

    public init(logger: Logger, maxResponseBytes: Int = 64 << 20) {
        self.logger = logger
        self.maxResponseBytes = maxResponseBytes
    }

    /// Performs a request and returns the response, whatever its status: the caller gives the
    /// status meaning. Transport failures throw `NetError`. Task cancellation aborts the transfer.
    public func perform(_ request: HTTPRequest) async throws(NetError) -> HTTPResponse {
        logger.debug("HTTP request", metadata: ["method": "\(request.method.rawValue)", "url": "\(request.url)"])
        let transfer = CurlTransfer(request: request, mode: .collect(maxBytes: maxResponseBytes))
        let result: Result<HTTPResponse, NetError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.start { continuation.resume(returning: $0) }
            }
        } onCancel: {
            transfer.control.cancel()
        }
        let response = try result.get()
        logger.debug("HTTP response", metadata: ["status": "\(response.status)", "url": "\(request.url)"])
        return response
    }

    /// Opens a stream: returns once the final response's headers are in and are a success
    /// (200, and `text/event-stream` when `requireEventStream`); throws `NetError` otherwise
    /// (`.status` carries the error body). Iterate the result for the body's chunks.
    public func stream(_ request: HTTPRequest, requireEventStream: Bool = true,
                       liveness: Duration? = nil, bufferedChunks: Int = 32) async throws(NetError) -> HTTPByteStream {
        logger.debug("HTTP stream", metadata: ["url": "\(request.url)"])
        let channel = HTTPByteStream.Channel(capacity: bufferedChunks)
        let transfer = CurlTransfer(request: request,
                                    mode: .stream(requireEventStream: requireEventStream, liveness: liveness, sink: channel))
        channel.control = transfer.control
        transfer.start { _ in }
        let opened: Result<(Int, [String: String]), NetError> = await withTaskCancellationHandler {
            await channel.waitUntilOpened()
        } onCancel: {
            transfer.control.cancel()
        }
        let (status, headers) = try opened.get()
        return HTTPByteStream(status: status, headers: headers, channel: channel)
    }
}

/// The body of a streaming response, chunk by chunk. Memory is bounded: when the consumer falls
/// `bufferedChunks` behind, the transfer thread waits (and TCP pushes back on the server).
/// Dropping or cancelling the iteration aborts the transfer.
public struct HTTPByteStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    public let status: Int
    public let headers: [String: String]
    let channel: Channel

    public func makeAsyncIterator() -> Iterator { Iterator(channel: channel) }

    /// Stops the transfer; a pending `next()` ends with `.cancelled`.
    public func cancel() { channel.cancel() }

    public struct Iterator: AsyncIteratorProtocol {
        let channel: Channel
        public mutating func next() async throws -> [UInt8]? {
            try await withTaskCancellationHandler {
                try await channel.next()
            } onCancel: { [channel] in
                channel.cancel()
            }
        }
    }

    /// The hand-off between the transfer's thread (producer) and the async consumer.
    final class Channel: CurlTransfer.StreamSink, @unchecked Sendable {
        private struct State {
            var opened: Result<(Int, [String: String]), NetError>?
            var openedWaiter: CheckedContinuation<Result<(Int, [String: String]), NetError>, Never>?
            var chunks: [[UInt8]] = []
            var head = 0
            var finished = false
            var error: NetError?
            var waiter: CheckedContinuation<[UInt8]?, any Error>?

            /// Takes the oldest chunk. The slot it leaves is emptied at once and the consumed
            /// prefix dropped every `limit` pops: a consumer that is always a little behind never
            /// empties the queue, and consumed chunks left in the array would be held until the
            /// stream ended (RSS grew with the stream's length on fast streams).
            mutating func popChunk(compactingAfter limit: Int) -> [UInt8] {
                let chunk = chunks[head]
                chunks[head] = []
                head += 1
                if head == chunks.count {
                    chunks.removeAll(keepingCapacity: true)
                    head = 0
                } else if head >= limit {
                    chunks.removeFirst(head)
                    head = 0
                }
                return chunk
            }
        }

        /// Chunks the queue still references, consumed or not (test visibility; at most 2 × capacity).
        var storedChunkCount: Int { state.withLock { $0.chunks.count } }

        private let state = Mutex(State())
        /// Counts free buffer slots; the producer waits on it (a plain thread, so blocking is fine).
        private let slots: DispatchSemaphore
        private let capacity: Int
        nonisolated(unsafe) var control: CurlTransfer.Control?

        init(capacity: Int) {
            self.capacity = Swift.max(1, capacity)
            // Start at zero and signal up: libdispatch traps if a semaphore is freed below its
            // initial value, which a cancelled stream can leave it at.
            slots = DispatchSemaphore(value: 0)
            for _ in 0..<self.capacity { slots.signal() }
        }

        func cancel() {
            control?.cancel()
            // Wake a producer blocked on a full buffer so it sees the flag.
            slots.signal()
        }

        func waitUntilOpened() async -> Result<(Int, [String: String]), NetError> {
            await withCheckedContinuation { continuation in
                let ready: Result<(Int, [String: String]), NetError>? = state.withLock { state in
                    if let opened = state.opened { return opened }
                    state.openedWaiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        private func resolveOpened(_ result: Result<(Int, [String: String]), NetError>) {
            let waiter: CheckedContinuation<Result<(Int, [String: String]), NetError>, Never>? = state.withLock { state in
                guard state.opened == nil else { return nil }
                state.opened = result
                defer { state.openedWaiter = nil }
                return state.openedWaiter
            }
            waiter?.resume(returning: result)
        }

        // Producer side (the transfer's thread).

        func opened(status: Int, headers: [String: String]) {
            resolveOpened(.success((status, headers)))
        }

        func received(_ chunk: UnsafeRawBufferPointer) {
            slots.wait()
            if control?.cancelled.load(ordering: .relaxed) == true { return }
            let bytes = [UInt8](chunk)
            let waiter: CheckedContinuation<[UInt8]?, any Error>? = state.withLock { state in
                if let waiter = state.waiter {
                    state.waiter = nil
                    return waiter
                }
                state.chunks.append(bytes)
                return nil
            }
            if let waiter {
                slots.signal()
                waiter.resume(returning: bytes)
            }
        }

        func finished(_ error: NetError?) {
            resolveOpened(.failure(error ?? NetError(.interrupted, url: "", detail: "the stream ended before it began")))
            let waiter: CheckedContinuation<[UInt8]?, any Error>? = state.withLock { state in
                state.finished = true
                state.error = error
                defer { state.waiter = nil }
                return state.chunks.count > state.head ? nil : state.waiter
            }
            if let waiter {
                if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
            }
        }

        // Consumer side.

        func next() async throws -> [UInt8]? {
            try Task.checkCancellation()
            return try await withCheckedThrowingContinuation { continuation in
                enum Outcome { case chunk([UInt8]), end, failure(NetError), wait }
                let outcome: Outcome = state.withLock { state in
                    if state.head < state.chunks.count {
                        let chunk = state.popChunk(compactingAfter: capacity)
                        return .chunk(chunk)
                    }
                    if state.finished {
                        if let error = state.error { return .failure(error) }
                        return .end
                    }
                    state.waiter = continuation
                    return .wait
                }
                switch outcome {
                case .chunk(let chunk):
                    slots.signal()
                    continuation.resume(returning: chunk)
                case .end: continuation.resume(returning: nil)
                case .failure(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        }
    }
}
