import Logging

/// An EventSource: an SSE stream that reconnects on its own, as browsers do, and tells its
/// consumer everything that happens so the consumer can resync (OpenCode) or resume (Codex
/// Worker). Bytes come from `HTTPClient.stream`, events from `SSEDecoder`, and the decision to
/// retry or stop from `ReconnectPolicy`; this type only wires them together.
///
/// It is pulled, not pushed: nothing is read from the socket until the consumer asks for the
/// next element, so a slow consumer slows the server down (TCP) instead of growing a buffer.
public struct EventSource: AsyncSequence, Sendable {
    public struct Configuration: Sendable {
        /// Builds each (re)connection's request; receives the last event id in force, or nil when
        /// there is none (never an empty string): then the request carries no `Last-Event-ID`.
        public var makeRequest: @Sendable (_ lastEventID: String?) -> HTTPRequest
        /// The last event id the first connection resumes from (`Last-Event-ID`); empty counts as none.
        public var lastEventID: String?
        /// Reconnect after this long without a byte (a multiple of the server's heartbeat).
        public var liveness: Duration?
        public var emitComments: Bool
        /// Whether to reconnect at all (`false`: the first failure or end is final).
        public var reconnect: Bool
        public var policy: ReconnectPolicy

        public init(makeRequest: @escaping @Sendable (_ lastEventID: String?) -> HTTPRequest, lastEventID: String? = nil,
                    liveness: Duration? = nil, emitComments: Bool = false, reconnect: Bool = true,
                    policy: ReconnectPolicy = ReconnectPolicy()) {
            self.makeRequest = makeRequest
            self.lastEventID = lastEventID
            self.liveness = liveness
            self.emitComments = emitComments
            self.reconnect = reconnect
            self.policy = policy
        }
    }

    public enum Element: Sendable {
        case connecting(attempt: Int)
        /// A connection is up. After a reconnect, whatever happened meanwhile was missed.
        case open(status: Int, headers: [String: String])
        case event(SSEEvent)
        case comment(String)
        /// The connection is gone; another attempt follows after `retryIn`.
        case disconnected(reason: NetError?, retryIn: Duration, attempt: Int)
    }

    /// What one network read's elements weigh against a bound on what waits decoded (a pipeline
    /// stage's): an event its data bytes (at least one), anything else one.
    public static func wireBytes(of batch: [Element]) -> Int {
        var total = 0
        for index in batch.indices {
            if case .event(let event) = batch[index] { total += Swift.max(event.dataBytes.count, 1) } else { total += 1 }
        }
        return total
    }

    public let client: HTTPClient
    public let configuration: Configuration

    public init(client: HTTPClient, configuration: Configuration) {
        self.client = client
        self.configuration = configuration
    }

    public func makeAsyncIterator() -> Iterator { Iterator(client: client, configuration: configuration) }

    /// Ends normally when the server ends the stream and reconnecting is off; throws the
    /// `NetError` the policy gave up on (401/403, 204, attempts exhausted, a non-retryable error).
    public struct Iterator: AsyncIteratorProtocol {
        let client: HTTPClient
        let configuration: Configuration
        private var policy: ReconnectPolicy
        private var decoder: SSEDecoder
        private var body: HTTPByteStream.Iterator?
        private var pending: [Element] = []
        private var pendingIndex = 0
        private var lastEventID: String?
        private var attempt = 0
        private var needsConnect = true
        private var finished = false

        init(client: HTTPClient, configuration: Configuration) {
            self.client = client
            self.configuration = configuration
            policy = configuration.policy
            decoder = SSEDecoder(emitComments: configuration.emitComments)
            lastEventID = configuration.lastEventID.flatMap { $0.isEmpty ? nil : $0 }
        }

        /// Everything decoded from what the network had delivered, with the connection events
        /// around it (at least one element); nil at the end. A consumer that handles a batch at
        /// once hands its results on at once.
        public mutating func nextBatch() async throws -> [Element]? {
            while pendingIndex >= pending.count {
                guard try await fill() else { return nil }
            }
            // Handed over whole: the elements move, none is copied.
            var batch: [Element] = []
            swap(&batch, &pending)
            if pendingIndex > 0 { batch.removeFirst(pendingIndex) }
            pendingIndex = 0
            return batch
        }

        public mutating func next() async throws -> Element? {
            while pendingIndex >= pending.count {
                guard try await fill() else { return nil }
            }
            defer {
                pendingIndex += 1
                if pendingIndex == pending.count {
                    pending.removeAll(keepingCapacity: true)
                    pendingIndex = 0
                }
            }
            return pending[pendingIndex]
        }

        /// Connects, reads or waits until `pending` holds something; false at the end.
        private mutating func fill() async throws -> Bool {
            while pending.isEmpty {
                if finished { return false }
                try Task.checkCancellation()
                if needsConnect {
                    if let wait = pendingSleep {
                        pendingSleep = nil
                        try await Task.sleep(for: wait)
                    }
                    needsConnect = false
                    attempt += 1
                    policy.connecting()
                    pending.append(.connecting(attempt: attempt))
                    do {
                        let stream = try await client.stream(configuration.makeRequest(lastEventID), requireEventStream: true,
                                                             liveness: configuration.liveness)
                        policy.connected(at: .now)
                        // The same decoder across connections: a new stream starts clean (finish),
                        // but the server's `retry:` outlives the connection that carried it.
                        decoder.finish()
                        decoder.lastEventID = lastEventID ?? ""
                        body = stream.makeAsyncIterator()
                        progressed = false
                        pending.append(.open(status: stream.status, headers: stream.headers))
                    } catch {
                        try await connectionLost(error)
                    }
                    continue
                }
                do {
                    // Every chunk that has arrived: one pull decodes all of it.
                    guard let chunks = try await body?.nextBatch() else {
                        decoder.finish()
                        try await connectionLost(nil)
                        continue
                    }
                    let logger = client.logger
                    var decoded: [Element] = []
                    for chunk in chunks {
                        chunk.withUnsafeBytes { raw in
                            decoder.feed(raw) { output in
                                switch output {
                                case .event(let event): decoded.append(.event(event))
                                case .comment(let text): decoded.append(.comment(text))
                                case .lineTooLong(let limit):
                                    logger.warning("dropped an SSE event with a line longer than \(limit) bytes")
                                }
                            }
                        }
                    }
                    // Any byte the server sent on this connection (`: connected`, a heartbeat,
                    // an event) means it is up and talking to us: a failure after it is a fresh
                    // one, and the backoff starts over. Counting only events, a quiet stream
                    // (heartbeats while a turn waits for an approval) that later dropped kept
                    // climbing the schedule on every reconnect (attempt 19, 17 s apart).
                    if !progressed, chunks.contains(where: { !$0.isEmpty }) {
                        progressed = true
                        policy.madeProgress()
                    }
                    // Moved, not copied: nothing else waits here (the loop runs while `pending` is empty).
                    pending = decoded
                    // Taken after every chunk, empty included: `id:` with no value resets the last
                    // event id (WHATWG), and the next connection then sends no Last-Event-ID at all,
                    // whichever chunk the reset arrived in.
                    lastEventID = decoder.lastEventID.isEmpty ? nil : decoder.lastEventID
                } catch {
                    try await connectionLost(error)
                }
            }
            return true
        }

        /// The connection failed or ended: ask the policy, then wait or give up.
        private mutating func connectionLost(_ error: (any Error)?) async throws {
            body = nil
            var failure: NetError?
            if let error {
                guard let net = error as? NetError else { throw error }  // cancellation
                if net.kind == .cancelled { throw CancellationError() }
                failure = net
            }
            guard configuration.reconnect else {
                end()
                if let failure { throw failure }
                return
            }
            if let failure, !failure.isRetryable {
                // 401/403, 404, 204, TLS, wrong content type, bad redirect: retrying will not help.
                // The iterator is done: a later `next()` returns nil instead of connecting again.
                end()
                throw failure
            }
            let reason: ReconnectPolicy.Failure = switch failure?.kind {
            case nil: .streamEnded
            case .stalled: .livenessTimeout
            case .status(let code): .httpStatus(code)
            default: .transportError
            }
            switch policy.failed(reason, at: .now) {
            case .reconnect(let delay, let next):
                // A server's `retry:` raises the floor; backoff and jitter still apply above it.
                let wait = Swift.max(decoder.reconnectionTime.map { Duration.milliseconds($0) } ?? .zero, delay)
                pending.append(.disconnected(reason: failure, retryIn: wait, attempt: next))
                needsConnect = true
                // The element is delivered first, then we sleep on the next pull.
                pendingSleep = wait
            case .stop:
                end()
                throw failure ?? NetError(.status(204), url: "", detail: "the server asked us not to reconnect")
            }
        }
        /// Nothing more comes: not the `.connecting` of the attempt that failed, not a reconnect.
        private mutating func end() {
            finished = true
            pending.removeAll()
            pendingIndex = 0
        }

        private var pendingSleep: Duration?
        /// Whether the current connection has delivered a byte yet.
        private var progressed = false
    }
}
