import Logging
import Synchronization
import TetherCore
import TetherStreaming

/// What one consumer (an event stream, an `approve` waiting for its request) receives from the
/// app-server connection: its messages in order, bounded in wire bytes (``CodexAppServerHub/inboxBytes``).
/// When it is full the connection's reader waits (and through the socket or pipe, the server)
/// — unless a call waits for its response, which must still be read: then what does not fit
/// is dropped, and the consumer is told how many messages (`Received.batch(_:lost:)`) and
/// re-reads the threads it follows.
typealias CodexAppServerInbox = BatchChannel<CodexAppServerMessage>

/// The one app-server connection a backend's commands share, as the protocol note advises (one
/// connection per backend, its own buffering above it): an event stream, `send`, `approve` and
/// the rest of a process — or of `tether serve`, for as long as it runs — use the same link.
/// For a stdio profile that is the only way at all: the child *is* the app-server, and it dies
/// with its connection.
///
/// Opened on first use and again after it ends (the caller's reconnect policy decides when).
/// Everything the server sends unasked goes to every subscriber's own bounded inbox; a
/// subscription lasts as long as the connection it was made on.
final class CodexAppServerHub: Sendable {
    struct Connection: Sendable {
        let client: CodexAppServerClient
        /// 1 for the first connection, then one more for each new one: a stdio child numbered
        /// higher than the last one seen is a new app-server process.
        let generation: Int
    }

    private struct State {
        var current: Connection?
        var opening: Task<Connection, any Error>?
        var generation = 0
        var subscribers: [Int: CodexAppServerInbox] = [:]
        var nextSubscriber = 0
    }

    /// Each subscriber's bound, in wire bytes: a read's worth past it waits (the size chosen is
    /// measured in bench/PROFILE.md).
    static let inboxBytes = 1 << 20

    private let configuration: CodexAppServerBackend.Configuration
    private let logger: Logger
    private let state = Mutex(State())

    init(configuration: CodexAppServerBackend.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The live connection, opened if there is none (one opening at a time, shared by callers).
    func connection() async throws -> Connection {
        let task = state.withLock { state -> Task<Connection, any Error>? in
            if state.current != nil { return nil }
            if let opening = state.opening { return opening }
            let opening = Task { try await self.open() }
            state.opening = opening
            return opening
        }
        guard let task else {
            if let current = state.withLock({ $0.current }) { return current }
            return try await connection()
        }
        return try await task.value
    }

    /// The live connection and a subscription to what it sends from now on.
    func subscribe() async throws -> (connection: Connection, inbox: CodexAppServerInbox, id: Int) {
        while true {
            let connection = try await connection()
            let inbox = CodexAppServerInbox(capacity: Self.inboxBytes)
            let id = state.withLock { state -> Int? in
                // Made on the connection still live, or not at all (it ended meanwhile: again).
                guard state.current?.generation == connection.generation else { return nil }
                state.nextSubscriber += 1
                state.subscribers[state.nextSubscriber] = inbox
                return state.nextSubscriber
            }
            if let id { return (connection, inbox, id) }
        }
    }

    func unsubscribe(_ id: Int) {
        // Ended too: the reader must never wait for a consumer that left.
        state.withLock { $0.subscribers.removeValue(forKey: id) }?.cancel()
    }

    /// Ends the connection (a stdio child gets EOF and exits).
    func close() async {
        let current = state.withLock { $0.current }
        await current?.client.close()
    }

    private func open() async throws -> Connection {
        let generation = state.withLock { state -> Int in
            state.generation += 1
            return state.generation
        }
        do {
            let client = try await CodexAppServerClient.open(configuration, logger: logger, onCall: { [weak self] in
                self?.rouseReader()
            }, deliver: { [weak self] incoming, rpc in
                await self?.hand(incoming, from: generation, rpc: rpc)
            })
            let connection = Connection(client: client, generation: generation)
            let ended = state.withLock { state -> Bool in
                state.opening = nil
                guard !client.rpc.hasEnded else { return true }
                state.current = connection
                return false
            }
            if ended {
                throw TetherError(.unavailable, "codex app-server at \(configuration.endpoint) closed the connection right after the greeting",
                                  retryable: true)
            }
            return connection
        } catch {
            state.withLock { $0.opening = nil }
            throw error
        }
    }

    /// What the connection of `generation` sends: to every subscriber (waiting for one that is
    /// behind, unless a call waits for its response); its end ends them.
    private func hand(_ incoming: CodexAppServerRPC.Incoming, from generation: Int, rpc: CodexAppServerRPC) async {
        switch incoming {
        case .messages(let messages, let bytes):
            let inboxes = state.withLock { state in
                state.current?.generation == generation ? Array(state.subscribers.values) : []
            }
            for inbox in inboxes {
                // Closed only when its subscriber left: nothing to hand it any more.
                _ = try? await inbox.send(contentsOf: messages, weight: bytes, mayWait: { !rpc.hasCallsWaiting })
            }
        case .ended(let error):
            let inboxes = state.withLock { state -> [CodexAppServerInbox] in
                guard state.current == nil || state.current?.generation == generation else { return [] }
                state.current = nil
                defer { state.subscribers = [:] }
                return Array(state.subscribers.values)
            }
            logger.debug("app-server connection ended", metadata: ["endpoint": "\(configuration.endpoint)", "error": "\(error.map { "\($0)" } ?? "none")"])
            for inbox in inboxes { inbox.finish(throwing: error) }
        }
    }

    /// A call started: a reader held up by a full inbox asks again whether it may wait.
    private func rouseReader() {
        for inbox in state.withLock({ Array($0.subscribers.values) }) { inbox.rouseProducers() }
    }
}
