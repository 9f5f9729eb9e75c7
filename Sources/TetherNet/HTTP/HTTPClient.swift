import Foundation
import Logging
import Synchronization
import TetherStreaming

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
/// Cancelling the iteration aborts the transfer, and so does dropping the stream and its
/// iterators, however the reader stopped: a transfer nobody reads would otherwise keep its
/// connection and its thread, blocked on the full buffer, for good.
public struct HTTPByteStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    public let status: Int
    public let headers: [String: String]
    let channel: Channel
    private let lifetime: Lifetime

    init(status: Int, headers: [String: String], channel: Channel) {
        self.status = status
        self.headers = headers
        self.channel = channel
        lifetime = Lifetime(channel)
    }

    public func makeAsyncIterator() -> Iterator { Iterator(channel: channel, lifetime: lifetime) }

    /// Stops the transfer; a pending `next()` ends with `.cancelled`.
    public func cancel() { channel.cancel() }

    /// Held by the stream and each iterator: when the last of them goes, the transfer stops
    /// (a no-op once it has ended).
    final class Lifetime: Sendable {
        let channel: Channel
        init(_ channel: Channel) { self.channel = channel }
        deinit { channel.cancel() }
    }

    /// Chunks one at a time; the hand-off itself moves everything that arrived at once.
    public struct Iterator: AsyncIteratorProtocol {
        let channel: Channel
        private let lifetime: Lifetime
        private var ready: [[UInt8]] = []
        private var index = 0

        init(channel: Channel, lifetime: Lifetime) {
            self.channel = channel
            self.lifetime = lifetime
        }

        public mutating func next() async throws -> [UInt8]? {
            if index == ready.count {
                guard let batch = try await channel.next() else { return nil }
                ready = batch
                index = 0
            }
            defer {
                ready[index] = []  // let go of a chunk once handed out
                index += 1
            }
            return ready[index]
        }

        /// Every chunk that has arrived and not been handed out, waiting for the next when there
        /// is none; nil at the end.
        public mutating func nextBatch() async throws -> [[UInt8]]? {
            if index < ready.count {
                defer {
                    ready.removeAll()
                    index = 0
                }
                return Array(ready[index...])
            }
            return try await channel.next()
        }
    }

    /// The hand-off between the transfer's thread (producer) and the async consumer: a
    /// `BatchChannel` of chunks, plus the moment the response opened.
    final class Channel: CurlTransfer.StreamSink, @unchecked Sendable {
        private struct Opening {
            var opened: Result<(Int, [String: String]), NetError>?
            var waiter: CheckedContinuation<Result<(Int, [String: String]), NetError>, Never>?
        }

        private let opening = Mutex(Opening())
        let chunks: BatchChannel<[UInt8]>
        nonisolated(unsafe) var control: CurlTransfer.Control?

        init(capacity: Int) {
            chunks = BatchChannel(capacity: capacity)
        }

        func cancel() {
            control?.cancel()
            // Wakes a producer blocked on a full buffer so it sees the flag.
            chunks.cancel()
        }

        func waitUntilOpened() async -> Result<(Int, [String: String]), NetError> {
            await withCheckedContinuation { continuation in
                let ready: Result<(Int, [String: String]), NetError>? = opening.withLock { opening in
                    if let opened = opening.opened { return opened }
                    opening.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        private func resolveOpened(_ result: Result<(Int, [String: String]), NetError>) {
            let waiter: CheckedContinuation<Result<(Int, [String: String]), NetError>, Never>? = opening.withLock { opening in
                guard opening.opened == nil else { return nil }
                opening.opened = result
                defer { opening.waiter = nil }
                return opening.waiter
            }
            waiter?.resume(returning: result)
        }

        // Producer side (the transfer's thread).

        func opened(status: Int, headers: [String: String]) {
            resolveOpened(.success((status, headers)))
        }

        func received(_ chunk: UnsafeRawBufferPointer) {
            if control?.cancelled.load(ordering: .relaxed) == true { return }
            // The consumer is gone: stop the transfer rather than read into nothing.
            if !chunks.sendBlocking(contentsOf: [[UInt8](chunk)]) { control?.cancel() }
        }

        func finished(_ error: NetError?) {
            resolveOpened(.failure(error ?? NetError(.interrupted, url: "", detail: "the stream ended before it began")))
            chunks.finish(throwing: error)
        }

        // Consumer side.

        func next() async throws -> [[UInt8]]? {
            if Task.isCancelled {
                cancel()  // as the handler below would: the reader is going away
                throw CancellationError()
            }
            return try await withTaskCancellationHandler {
                try await chunks.next()
            } onCancel: {
                self.cancel()
            }
        }
    }
}
