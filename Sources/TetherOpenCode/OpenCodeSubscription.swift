import Logging
import TetherCore
import TetherNet
import TetherStreaming

/// What both OpenCode generations' streams do alike: hold one SSE subscription at a time, read
/// and decoded ahead of the stream machine (`pumpStream`), and subscribe again on the policy's
/// schedule when a REST step of the machine's (a resync, a log catch-up, the prompt's POST)
/// fails in a way that may pass. Each stream supplies its route, its decoder and its machine.
struct OpenCodeSubscription {
    let backend: OpenCodeBackend
    /// The REST client of the server (1.x's, or the one 2.x's client wraps).
    let client: OpenCodeClient
    let output: EventChannel
    let outbox: EventOutbox
    /// What a failing REST step was, for the log line ("a resync or the prompt's POST").
    let restSteps: String

    /// Runs `subscribe` until it says the stream is over (true; false subscribes again at once).
    /// A retryable `TetherError` from it waits the policy's next delay and subscribes again (the
    /// next `server.connected` resyncs); a `NetError` ends the run. What was produced is handed
    /// on before either. `subscribe` gets the policy, to say when the stream made progress.
    func run(_ subscribe: (inout ReconnectPolicy) async throws -> Bool) async throws {
        var retries = ReconnectPolicy(configuration: backend.configuration.reconnect)
        while !Task.isCancelled {
            do {
                if try await subscribe(&retries) { return }
            } catch let error as NetError {
                try await outbox.flush()
                throw client.mapTransport(error)
            } catch let error as TetherError where error.retryable && !Task.isCancelled {
                try await outbox.flush()
                try await retries.waitToReconnect(after: error, during: restSteps, endpoint: client.configuration.baseURL,
                                                  output: output, logger: backend.logger)
            }
        }
    }

    /// One subscription to `path` until it ends or the machine is done: `makeDecoder` (called in
    /// the decoding task, once a subscription) turns each network read into the machine's input,
    /// which `feed` hands to the machine; the outbox is flushed after each read.
    func pump<Decoded: Sendable>(
        _ path: String, scoped: Bool,
        makeDecoder: @escaping @Sendable () -> ([EventSource.Element]) -> [Decoded],
        leaving placeholder: Decoded,
        isDone: () -> Bool,
        feed: (Decoded) async throws -> Void,
        endOfBatch: () async throws -> Void = {}
    ) async throws {
        let source = EventSource(client: client.http, configuration: .init(
            makeRequest: { [client] _ in
                HTTPRequest(.get, client.url(path, scoped: scoped),
                            headers: [("Accept", "text/event-stream"), ("Cache-Control", "no-cache")],
                            authorization: client.authorization, connectTimeout: .seconds(10))
            },
            liveness: backend.configuration.streamLiveness,
            policy: ReconnectPolicy(configuration: backend.configuration.reconnect)))
        let outbox = outbox
        // Reading and decoding run ahead in a task of their own (another core); the machine and
        // its I/O stay here, in order.
        _ = try await pumpStream(decodingAhead: decodedWireBytesAhead, produce: { channel in
            let decode = makeDecoder()
            var elements = source.makeAsyncIterator()
            while let batch = try await elements.nextBatch() {
                try await channel.send(contentsOf: decode(batch), weight: EventSource.wireBytes(of: batch))
            }
        }, leaving: placeholder, isDone: isDone, feed: feed, endOfBatch: {
            try await endOfBatch()
            try await outbox.flush()
        })
    }
}
