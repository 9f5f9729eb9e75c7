import CCurl
import Foundation
import Logging
import Synchronization
import TetherStreaming

/// A WebSocket client connection (RFC 6455) over libcurl's raw byte stream.
///
/// Why by hand: Debian 12's libcurl (7.88) is built without `ws://` support, so libcurl only
/// connects — `CURLOPT_CONNECT_ONLY = 1` does TCP, TLS and any proxy (as for every other
/// transfer) — and Tether sends the opening handshake and frames the bytes itself with
/// `curl_easy_send` / `curl_easy_recv`. The codec is the pure ``WebSocketFrameDecoder`` /
/// ``WebSocketFrameEncoder``; this class is only the I/O around it.
///
/// One thread per connection owns the curl handle (connect, handshake, then a loop that `poll`s
/// the socket from `CURLINFO_ACTIVESOCKET` and a wake pipe), so nothing blocks Swift's pool and
/// the handle is never touched from two threads. The thread answers pings, keeps the link alive
/// with pings of its own when asked to, fails it when it goes silent, and runs the close
/// handshake. The messages one read completes go to the consumer as one batch through a
/// `BatchChannel` weighed in bytes; the thread reads only while it has room (it never blocks on
/// the consumer): once half of `bufferedBytes` of messages wait — the other half is the batch the
/// consumer is working through — it stops reading, TCP pushes back on the server, and the
/// consumer's next take wakes it.
public final class WebSocketConnection: Sendable {
    public struct Configuration: Sendable {
        /// `ws://…` or `wss://…`.
        public var url: String
        /// Extra request headers (`Origin`, `Authorization`, …).
        public var headers: [(name: String, value: String)]
        /// Connect to this unix socket instead of the URL's host and port (the URL still gives
        /// the upgrade request's path and `Host`): Codex's app-server daemon listens so.
        public var unixSocketPath: String?
        /// Offered in `Sec-WebSocket-Protocol`; the server may pick one.
        public var subprotocols: [String]
        /// TCP + TLS (+ proxy) connect, libcurl's part.
        public var connectTimeout: Duration
        /// The opening handshake, once connected.
        public var handshakeTimeout: Duration
        /// The largest message accepted from the server; a larger one fails the connection (1009).
        public var maxMessageSize: Int
        /// Outgoing messages are split into frames of at most this many payload bytes.
        public var maxFrameSize: Int
        /// How many bytes of received messages (payloads, and a buffer slot each) may be held
        /// for `receive()` before reading pauses (half waiting in the hand-off, half in the
        /// batch the consumer works through).
        public var bufferedBytes: Int
        /// Send a ping after this long without hearing from the server (nil: never).
        public var pingInterval: Duration?
        /// Fail the connection (`NetError.stalled`) after this long without a byte (nil: never).
        public var liveness: Duration?
        /// How long `close()` waits for the server's close frame.
        public var closeTimeout: Duration

        public init(url: String, headers: [(name: String, value: String)] = [], subprotocols: [String] = [],
                    connectTimeout: Duration = .seconds(10), handshakeTimeout: Duration = .seconds(10),
                    maxMessageSize: Int = 16 << 20, maxFrameSize: Int = 64 << 10, bufferedBytes: Int = 4 << 20,
                    pingInterval: Duration? = nil, liveness: Duration? = nil, closeTimeout: Duration = .seconds(5),
                    unixSocketPath: String? = nil) {
            self.url = url
            self.headers = headers
            self.unixSocketPath = unixSocketPath
            self.subprotocols = subprotocols
            self.connectTimeout = connectTimeout
            self.handshakeTimeout = handshakeTimeout
            self.maxMessageSize = maxMessageSize
            self.maxFrameSize = maxFrameSize
            self.bufferedBytes = bufferedBytes
            self.pingInterval = pingInterval
            self.liveness = liveness
            self.closeTimeout = closeTimeout
        }
    }

    public let endpoint: WebSocketEndpoint
    let configuration: Configuration
    let logger: Logger
    private let state = Mutex(State())
    /// Received messages, one batch per read, weighed in bytes.
    private let incoming: BatchChannel<WebSocketMessage>
    /// The consumer's current batch (one reader at a time).
    private let inbox = Mutex(Inbox())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Set when the task awaiting `connect` is cancelled; read by libcurl's progress callback.
    private let openCancelled = Atomic<Bool>(false)

    private static let readChunk = 64 << 10

    /// Connects, runs the opening handshake and returns the open connection. Throws `NetError`:
    /// `.connect`/`.timeout`/`.tls` from the connect, `.status` when the server answers the
    /// upgrade with something other than 101, `.other` when the handshake does not check out.
    public static func connect(_ configuration: Configuration, logger: Logger) async throws(NetError) -> WebSocketConnection {
        let endpoint = try WebSocketEndpoint(configuration.url)
        guard let wake = TCPSocket.makeWakePipe() else {
            throw NetError(.other, url: configuration.url, detail: "cannot create a pipe: \(TCPSocket.errorText())")
        }
        let connection = WebSocketConnection(endpoint: endpoint, configuration: configuration, wake: wake, logger: logger)
        logger.debug("WebSocket connect", metadata: ["url": "\(configuration.url)"])
        let opened: Result<Void, NetError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                connection.state.withLock { $0.openWaiter = continuation }
                let thread = Thread { connection.run() }
                thread.name = "tether.websocket"
                thread.start()
            }
        } onCancel: {
            connection.openCancelled.store(true, ordering: .relaxed)
            connection.state.withLock { connection.wake(&$0) }
        }
        try opened.get()
        logger.debug("WebSocket open", metadata: ["url": "\(configuration.url)"])
        return connection
    }

    private init(endpoint: WebSocketEndpoint, configuration: Configuration, wake: (read: Int32, write: Int32), logger: Logger) {
        self.endpoint = endpoint
        self.configuration = configuration
        wakeRead = wake.read
        wakeWrite = wake.write
        self.logger = logger
        incoming = BatchChannel(capacity: Swift.max(1, configuration.bufferedBytes / 2))
    }

    // MARK: - API

    /// The subprotocol the server chose, if any.
    public var subprotocol: String? { state.withLock { $0.response?.subprotocol } }
    /// The handshake response's headers (names lower-cased).
    public var responseHeaders: [String: String] { state.withLock { $0.response?.headers ?? [:] } }
    /// The close frame the server sent, once it has.
    public var peerClose: WebSocketClose? { state.withLock { $0.peerClose } }

    /// Sends a whole message (split into frames of `maxFrameSize`). Returns once its bytes are
    /// handed to libcurl; throws `NetError` when the connection has ended or is closing.
    public func send(_ message: WebSocketMessage) async throws {
        let bytes = WebSocketFrameEncoder.message(message, maxFrameSize: configuration.maxFrameSize) { .random() }
        try await enqueue(bytes)
    }

    public func send(text: String) async throws { try await send(.text(text)) }

    /// Sends a ping (at most 125 bytes of payload); the server's pong is not surfaced.
    public func ping(_ payload: [UInt8] = []) async throws {
        guard payload.count <= 125 else {
            throw NetError(.other, url: endpoint.url, detail: "a ping payload is at most 125 bytes")
        }
        try await enqueue(WebSocketFrameEncoder.frame(.ping, payload: payload, mask: .random()))
    }

    /// The next message; `nil` once the connection has closed in an orderly way (a close
    /// handshake with 1000, 1001 or no code, or one we began). Throws `NetError` when it broke:
    /// `.interrupted` for a close with another code or a dropped connection, `.tooLarge` for a
    /// message over the limit, `.stalled` for silence past `liveness`, `.other` for a protocol
    /// violation. One reader at a time; cancelling the task ends the wait with CancellationError.
    public func receive() async throws -> WebSocketMessage? {
        if let message = inbox.withLock({ $0.take() }) { return message }
        guard let batch = try await incoming.next(cancellation: .endsWaitOnly) else { return nil }
        return inbox.withLock { inbox in
            inbox.hold(batch)
            return inbox.take()
        }
    }

    /// The messages as an async sequence (one iteration at a time), ending when `receive()` does.
    public var messages: Messages { Messages(connection: self) }

    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = WebSocketMessage
        let connection: WebSocketConnection
        public func makeAsyncIterator() -> Iterator { Iterator(connection: connection) }

        public struct Iterator: AsyncIteratorProtocol {
            let connection: WebSocketConnection
            public mutating func next() async throws -> WebSocketMessage? { try await connection.receive() }
        }
    }

    /// Runs the close handshake: sends a close frame, waits (up to `closeTimeout`) for the
    /// server's, then drops the connection. Idempotent; returns at once when already ended.
    public func close(_ close: WebSocketClose = WebSocketClose(code: .normalClosure)) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended: Bool = state.withLock { state in
                guard state.end == nil else { return true }
                state.closeWaiters.append(continuation)
                if !state.closeSent {
                    state.closeSent = true
                    state.weInitiatedClose = true
                    let frame = WebSocketFrameEncoder.frame(.close, payload: WebSocketFrameEncoder.closePayload(close), mask: .random())
                    state.writes.append(PendingWrite(bytes: frame, continuation: nil))
                }
                wake(&state)
                return false
            }
            if ended { continuation.resume() }
        }
    }

    /// Drops the connection at once, without a close handshake (a waiting `receive()` fails
    /// with `.cancelled`). For teardown paths that cannot wait.
    public func abort() {
        state.withLock { state in
            guard state.end == nil else { return }
            state.abortRequested = true
            wake(&state)
        }
    }

    /// The most bytes of messages ever waiting in the hand-off: the memory bound the tests check.
    /// The consumer's current batch comes on top, at most what the hand-off held when taken.
    var peakBufferedBytes: Int { state.withLock { $0.peakBuffered } }

    private func enqueue(_ bytes: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let refused: NetError? = state.withLock { state in
                if case .failed(let error) = state.end { return error }
                guard state.end == nil, !state.closeSent, !state.abortRequested else {
                    return NetError(.interrupted, url: endpoint.url, detail: "the WebSocket is closed or closing")
                }
                state.writes.append(PendingWrite(bytes: bytes, continuation: continuation))
                wake(&state)
                return nil
            }
            if let refused { continuation.resume(throwing: refused) }
        }
    }

    // MARK: - State shared by the I/O thread and callers

    fileprivate enum End {
        case clean
        case failed(NetError)
    }

    /// The batch the consumer took from the channel, handed out a message at a time.
    fileprivate struct Inbox {
        var messages: [WebSocketMessage] = []
        var head = 0

        mutating func hold(_ batch: [WebSocketMessage]) {
            messages = batch
            head = 0
        }

        mutating func take() -> WebSocketMessage? {
            guard head < messages.count else { return nil }
            let message = messages[head]
            messages[head] = .binary([])  // released now, not with the batch
            head += 1
            if head == messages.count { hold([]) }
            return message
        }
    }

    fileprivate struct PendingWrite {
        var bytes: [UInt8]
        var offset = 0
        /// Handed to libcurl at least once (maybe only partly, or refused with EAGAIN).
        var attempted = false
        let continuation: CheckedContinuation<Void, any Error>?
    }

    fileprivate struct State {
        var openWaiter: CheckedContinuation<Result<Void, NetError>, Never>?
        var response: WebSocketHandshake.Response?
        var peakBuffered = 0
        var writes: [PendingWrite] = []
        /// A close frame is queued or sent: no more data may follow it.
        var closeSent = false
        var weInitiatedClose = false
        var peerClose: WebSocketClose?
        var abortRequested = false
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var end: End?
        /// The wake pipe is open (the I/O thread closes it on its way out).
        var ioRunning = true

        /// Removes the writes not yet begun (nothing may follow a close frame); returns their waiters.
        mutating func dropUnsent() -> [CheckedContinuation<Void, any Error>] {
            let keep = writes.first?.attempted == true ? 1 : 0
            let dropped = writes[keep...].compactMap(\.continuation)
            writes.removeSubrange(keep...)
            return dropped
        }

        /// Queues a control frame ahead of data that has not started going out.
        mutating func queueControl(_ bytes: [UInt8]) {
            let index = writes.first.map { $0.attempted ? 1 : 0 } ?? 0
            writes.insert(PendingWrite(bytes: bytes, continuation: nil), at: index)
        }
    }

    /// Wakes the I/O thread's poll. Called with the lock held, so the pipe cannot be closed meanwhile.
    private func wake(_ state: inout State) {
        guard state.ioRunning else { return }
        TCPSocket.signal(wakeWrite)
    }

    // MARK: - The I/O thread

    private func run() {
        CurlGlobal.initialize()
        var ending: End
        if let handle = curl_easy_init() {
            ending = open(handle)
            curl_easy_cleanup(handle)
        } else {
            ending = .failed(NetError(.other, url: endpoint.url, detail: "libcurl could not create a handle"))
        }
        shutDown(ending)
    }

    /// Connects and shakes hands; on success reports the open connection and runs the frame loop.
    private func open(_ handle: UnsafeMutableRawPointer) -> End {
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { errorPointer in
            tether_curl_setopt_string(handle, CURLOPT_URL, endpoint.connectURL)
            if let path = configuration.unixSocketPath { tether_curl_setopt_string(handle, CURLOPT_UNIX_SOCKET_PATH, path) }
            tether_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorPointer.baseAddress)
            // Connect (TCP, TLS, proxy tunnel) and stop: the bytes after that are ours.
            tether_curl_setopt_long(handle, CURLOPT_CONNECT_ONLY, 1)
            // Through an HTTP proxy, tunnel with CONNECT even for ws:// (our GET is not the proxy's to forward).
            tether_curl_setopt_long(handle, CURLOPT_HTTPPROXYTUNNEL, 1)
            // No h2 in ALPN: the upgrade is HTTP/1.1.
            tether_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, tether_curl_http_version_1_1())
            tether_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            tether_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
            tether_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1)
            tether_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2)
            tether_curl_setopt_long(handle, CURLOPT_TCP_NODELAY, 1)
            tether_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.milliseconds))
            tether_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
            tether_curl_setopt_xferinfo_callback(handle) { userdata, _, _, _, _ in
                let connection = Unmanaged<WebSocketConnection>.fromOpaque(userdata!).takeUnretainedValue()
                return connection.openCancelled.load(ordering: .relaxed) ? 1 : 0
            }
            tether_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, Unmanaged.passUnretained(self).toOpaque())
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            return .failed(connectError(code, detail: detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail))
        }
        var socket = curl_socket_t(-1)
        guard tether_curl_getinfo_socket(handle, &socket) == CURLE_OK, socket >= 0 else {
            return .failed(NetError(.other, url: endpoint.url, detail: "libcurl connected but has no socket"))
        }
        let link = Link(handle: handle, fd: socket, url: endpoint.url)

        var handshake = WebSocketHandshake(endpoint: endpoint, subprotocols: configuration.subprotocols, headers: configuration.headers)
        let response: WebSocketHandshake.Response
        switch shakeHands(&handshake, link) {
        case .success(let value): response = value
        case .failure(let error): return .failed(error)
        }
        let waiter: CheckedContinuation<Result<Void, NetError>, Never>? = state.withLock { state in
            state.response = response
            defer { state.openWaiter = nil }
            return state.openWaiter
        }
        waiter?.resume(returning: .success(()))
        return frameLoop(link, leftover: response.leftover)
    }

    /// Sends the upgrade request and reads the response, within `handshakeTimeout`.
    private func shakeHands(_ handshake: inout WebSocketHandshake, _ link: Link) -> Result<WebSocketHandshake.Response, NetError> {
        let deadline = ContinuousClock.now + configuration.handshakeTimeout
        let request = handshake.request
        var sent = 0
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            if openCancelled.load(ordering: .relaxed) {
                return .failure(NetError(.cancelled, url: endpoint.url, detail: "cancelled during the WebSocket handshake"))
            }
            let remaining = deadline - .now
            guard remaining > .zero else {
                return .failure(NetError(.timeout, url: endpoint.url, detail: "no WebSocket handshake answer within \(configuration.handshakeTimeout)"))
            }
            if sent < request.count {
                switch request.withUnsafeBytes({ link.send(UnsafeRawBufferPointer(rebasing: $0[sent...])) }) {
                case .success(let count): sent += count
                case .failure(let error): return .failure(error)
                }
            } else {
                switch link.receive(chunk) {
                case .success(0?):
                    return .failure(NetError(.interrupted, url: endpoint.url, detail: "the server closed the connection during the WebSocket handshake"))
                case .success(let count?):
                    do {
                        if let response = try handshake.feed(UnsafeRawBufferPointer(rebasing: chunk[..<count])) { return .success(response) }
                    } catch {
                        return .failure(error)
                    }
                    continue
                case .success(nil):
                    break
                case .failure(let error):
                    return .failure(error)
                }
            }
            let events = sent < request.count ? Int16(POLLOUT) : Int16(POLLIN)
            var fds = [pollfd(fd: link.fd, events: events, revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let slice = Int32(clamping: Swift.min(remaining.milliseconds + 1, 1000))
            if poll(&fds, 2, slice) < 0 && errno != EINTR {
                return .failure(NetError(.other, url: endpoint.url, detail: "poll(): \(TCPSocket.errorText())"))
            }
            if fds[1].revents != 0 { TCPSocket.drain(wakeRead) }
        }
    }

    private func frameLoop(_ link: Link, leftover: [UInt8]) -> End {
        var decoder = WebSocketFrameDecoder(role: .client, maxMessageSize: configuration.maxMessageSize)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readChunk, alignment: 1)
        defer { chunk.deallocate() }
        var lastReceived = ContinuousClock.now
        var lastPing = ContinuousClock.now
        var closeDeadline: ContinuousClock.Instant?
        // libcurl (TLS) may hold decrypted bytes the socket no longer signals: after stopping
        // short of EAGAIN, read again without waiting for poll.
        var mayHaveMore = false
        // The server broke the protocol: our close frame is queued, and until the server closes
        // (or a short linger passes) incoming bytes are read and dropped. Closing the socket on
        // unread bytes would send a RST, and the server could lose our close frame with it.
        var failing: NetError?

        // Read only what the consumer has room for: the gate wakes us when it has again.
        var gate = ReadGate(channel: incoming) { [self] in state.withLock { wake(&$0) } }

        if !leftover.isEmpty, let failure = leftover.withUnsafeBytes({ decode($0, &decoder, link) }) {
            failing = failure
        }

        while true {
            let (wantWrite, closeSent, peerClosed, weInitiated, abort) = state.withLock { state in
                (!state.writes.isEmpty, state.closeSent, state.peerClose != nil, state.weInitiatedClose, state.abortRequested)
            }
            // While failing, bytes are read and dropped whatever the consumer does.
            let wantRead = failing != nil || (!peerClosed && gate.mayRead())
            if abort {
                return .failed(NetError(.cancelled, url: endpoint.url, detail: "the WebSocket was aborted"))
            }
            let now = ContinuousClock.now
            // Time spent waiting for a slow consumer is not the server's silence.
            if !wantRead { lastReceived = now }
            if let failing {
                let linger = closeDeadline ?? now + Swift.min(configuration.closeTimeout, .seconds(1))
                closeDeadline = linger
                if now >= linger { return .failed(failing) }
            } else if peerClosed && !wantWrite {
                // Both close frames are through: the connection is over.
                guard let close = state.withLock({ $0.peerClose }), !weInitiated, !close.code.isOrderly else { return .clean }
                return .failed(NetError(.interrupted, url: endpoint.url, detail: "the server closed the WebSocket: \(close)"))
            }
            if closeSent && closeDeadline == nil { closeDeadline = now + configuration.closeTimeout }
            if let closeDeadline, now >= closeDeadline {
                logger.debug("no close frame from the server in time; dropping the connection", metadata: ["url": "\(endpoint.url)"])
                return weInitiated ? .clean
                    : .failed(NetError(.interrupted, url: endpoint.url, detail: "the WebSocket close handshake did not finish"))
            }
            if failing == nil, let liveness = configuration.liveness, now - lastReceived > liveness {
                return .failed(NetError(.stalled, url: endpoint.url, detail: "no data for \(liveness)"))
            }
            var deadlines: [ContinuousClock.Instant] = closeDeadline.map { [$0] } ?? []
            if let liveness = configuration.liveness { deadlines.append(lastReceived + liveness + .milliseconds(1)) }
            if let interval = configuration.pingInterval, !closeSent {
                let due = Swift.max(lastReceived, lastPing) + interval
                if now >= due {
                    lastPing = now
                    state.withLock { $0.queueControl(WebSocketFrameEncoder.frame(.ping, payload: [], mask: .random())) }
                    continue
                }
                deadlines.append(due)
            }
            var timeout: Int32 = deadlines.min().map { Int32(clamping: Swift.max(0, ($0 - now).milliseconds + 1)) } ?? -1
            if wantRead && mayHaveMore { timeout = 0 }

            var fds = [
                pollfd(fd: wantRead || wantWrite ? link.fd : -1,
                       events: Int16(wantRead ? POLLIN : 0) | Int16(wantWrite ? POLLOUT : 0), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&fds, 2, timeout) < 0 {
                if errno == EINTR { continue }
                return .failed(NetError(.other, url: endpoint.url, detail: "poll(): \(TCPSocket.errorText())"))
            }
            if fds[1].revents != 0 { TCPSocket.drain(wakeRead) }
            let revents = Int32(fds[0].revents)
            if revents & Int32(POLLNVAL) != 0 {
                return .failed(NetError(.interrupted, url: endpoint.url, detail: "the socket was closed"))
            }
            if wantWrite, revents & Int32(POLLOUT | POLLERR | POLLHUP) != 0, let failure = flushWrites(link) {
                return .failed(failure)
            }
            guard wantRead, mayHaveMore || revents & Int32(POLLIN | POLLERR | POLLHUP) != 0 else { continue }
            // A bounded number of reads per turn, so queued writes and timers are not starved.
            mayHaveMore = true
            reading: for _ in 0..<16 {
                switch link.receive(chunk) {
                case .success(nil):
                    mayHaveMore = false
                    break reading
                case .success(0?):
                    if let failing { return .failed(failing) }
                    if state.withLock({ $0.peerClose != nil || $0.weInitiatedClose }) { return .clean }
                    return .failed(NetError(.interrupted, url: endpoint.url,
                                            detail: "the server dropped the connection without a WebSocket close (1006)"))
                case .success(let count?):
                    lastReceived = .now
                    if failing != nil { continue }  // dropped: see `failing`
                    if let failure = decode(UnsafeRawBufferPointer(rebasing: chunk[..<count]), &decoder, link) {
                        failing = failure
                        continue
                    }
                    // Stop short when the server has said goodbye or the consumer is behind (backpressure).
                    if state.withLock({ $0.peerClose != nil }) || !gate.mayRead() { break reading }
                case .failure(let error):
                    if let failing { return .failed(failing) }
                    if state.withLock({ $0.peerClose != nil || $0.weInitiatedClose }) { return .clean }
                    return .failed(error)
                }
            }
        }
    }

    /// Feeds bytes to the decoder and acts on what comes out; returns the failure that ends the connection.
    private func decode(_ bytes: UnsafeRawBufferPointer, _ decoder: inout WebSocketFrameDecoder, _ link: Link) -> NetError? {
        let outputs: [WebSocketFrameDecoder.Output]
        do {
            outputs = try decoder.feed(bytes)
        } catch {
            return brokeProtocol(error)
        }
        act(on: outputs)
        // Frames before a bad one in the same read were delivered first; now the connection fails.
        if let error = decoder.failure { return brokeProtocol(error) }
        return nil
    }

    /// Acts on one read's decoded frames: messages to the consumer, pongs for pings, the close
    /// handshake.
    private func act(on outputs: [WebSocketFrameDecoder.Output]) {
        var messages: [WebSocketMessage] = []
        defer { deliver(messages) }
        for output in outputs {
            switch output {
            case .message(let message):
                messages.append(message)
            case .ping(let payload):
                state.withLock { state in
                    guard !state.closeSent else { return }
                    state.queueControl(WebSocketFrameEncoder.frame(.pong, payload: payload, mask: .random()))
                }
            case .pong:
                break
            case .close(let close):
                logger.debug("WebSocket close from the server", metadata: ["url": "\(endpoint.url)", "close": "\(close)"])
                let dropped: [CheckedContinuation<Void, any Error>] = state.withLock { state in
                    state.peerClose = close
                    guard !state.closeSent else { return [] }
                    state.closeSent = true
                    let dropped = state.dropUnsent()
                    // Echo the code (RFC 6455 §5.5.1); a close without one is answered without one.
                    let echo = WebSocketFrameEncoder.closePayload(close)
                    state.queueControl(WebSocketFrameEncoder.frame(.close, payload: echo, mask: .random()))
                    return dropped
                }
                let unsent = NetError(.interrupted, url: endpoint.url, detail: "the server closed the WebSocket (\(close)) before the message was sent")
                for waiter in dropped { waiter.resume(throwing: unsent) }
            }
        }
    }

    /// The server broke the protocol: close with the code the decoder chose, fail what waits to
    /// be sent; returns the failure that ends the connection.
    private func brokeProtocol(_ error: WebSocketFrameDecoder.ProtocolError) -> NetError {
        logger.warning("the WebSocket server broke the protocol; closing", metadata: ["url": "\(endpoint.url)", "error": "\(error)"])
        let failure = NetError(error.closeCode == .messageTooBig ? .tooLarge : .other, url: endpoint.url,
                               detail: "the server broke the WebSocket protocol: \(error.reason)")
        let dropped: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            guard !state.closeSent else { return [] }
            state.closeSent = true
            let dropped = state.dropUnsent()
            let close = WebSocketClose(code: error.closeCode, reason: error.reason)
            state.queueControl(WebSocketFrameEncoder.frame(.close, payload: WebSocketFrameEncoder.closePayload(close), mask: .random()))
            return dropped
        }
        for waiter in dropped { waiter.resume(throwing: failure) }
        return failure
    }

    /// Hands one read's messages to the consumer (there is room: the thread read only because
    /// there was).
    private func deliver(_ messages: [WebSocketMessage]) {
        guard !messages.isEmpty else { return }
        // Each message weighs its payload and its slot in the buffer: a flood of empty
        // messages (2 bytes each on the wire) is bounded too.
        var bytes = 0
        for index in messages.indices { bytes += messages[index].byteCount + MemoryLayout<WebSocketMessage>.stride }
        switch incoming.trySend(contentsOf: messages, weight: bytes, onRoom: {}) {
        case .accepted, .closed:
            break  // closed: nobody will read them (the consumer cancelled the channel)
        case .full:
            // Not with one producer that read only because there was room; were it ever, the
            // messages must still get through, in order.
            incoming.sendBlocking(contentsOf: messages, weight: bytes)
        }
        let held = incoming.bufferedWeight
        state.withLock { $0.peakBuffered = Swift.max($0.peakBuffered, held) }
    }

    /// Writes what libcurl takes now; returns the error that ends the connection.
    private func flushWrites(_ link: Link) -> NetError? {
        var done: [CheckedContinuation<Void, any Error>] = []
        defer { for continuation in done { continuation.resume() } }
        // Only this thread inserts ahead of `writes[0]` (queueControl), so `first` stays first.
        while let next = state.withLock({ $0.writes.first }) {
            switch next.bytes.withUnsafeBytes({ link.send(UnsafeRawBufferPointer(rebasing: $0[next.offset...])) }) {
            case .failure(let error):
                return error
            case .success(0):
                // Would block. A TLS write must be retried with the same bytes: keep it first.
                state.withLock { $0.writes[0].attempted = true }
                return nil
            case .success(let count):
                state.withLock { state in
                    state.writes[0].offset += count
                    state.writes[0].attempted = true
                    guard state.writes[0].offset == state.writes[0].bytes.count else { return }
                    if let continuation = state.writes.removeFirst().continuation { done.append(continuation) }
                }
            }
        }
        return nil
    }

    /// Ends the connection: records why, closes the wake pipe and settles every waiter.
    private func shutDown(_ ending: End) {
        let (writes, waiters, openWaiter, end): ([PendingWrite], [CheckedContinuation<Void, Never>],
                                                 CheckedContinuation<Result<Void, NetError>, Never>?, End)
            = state.withLock { state in
                if state.end == nil { state.end = ending }
                state.ioRunning = false
                let writes = state.writes
                state.writes = []
                let waiters = state.closeWaiters
                state.closeWaiters = []
                let openWaiter = state.openWaiter
                state.openWaiter = nil
                return (writes, waiters, openWaiter, state.end!)
            }
        _ = TCPSocket.systemClose(wakeRead)
        _ = TCPSocket.systemClose(wakeWrite)
        let failure: NetError
        switch end {
        case .failed(let error):
            failure = error
            logger.debug("WebSocket ended", metadata: ["url": "\(endpoint.url)", "error": "\(error.detail)"])
        case .clean:
            failure = NetError(.interrupted, url: endpoint.url, detail: "the WebSocket closed before the message was sent")
            logger.debug("WebSocket closed", metadata: ["url": "\(endpoint.url)"])
        }
        openWaiter?.resume(returning: .failure(failure))
        for write in writes { write.continuation?.resume(throwing: failure) }
        // The consumer gets the messages already read, then the end.
        switch end {
        case .clean: incoming.finish()
        case .failed(let error): incoming.finish(throwing: error)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func connectError(_ code: CURLcode, detail: String) -> NetError {
        let url = endpoint.url
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return NetError(.connect, url: url, detail: detail)
        case CURLE_OPERATION_TIMEDOUT:
            return NetError(.timeout, url: url, detail: detail)
        case CURLE_ABORTED_BY_CALLBACK:
            return NetError(.cancelled, url: url, detail: "cancelled while connecting")
        case CURLE_SSL_CONNECT_ERROR:
            return .tlsHandshake(url: url, detail: detail)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR:
            return NetError(.tls, url: url, detail: detail)
        default:
            return NetError(.other, url: url, detail: detail)
        }
    }
}

/// The connected curl handle as a byte pipe: `curl_easy_send` / `curl_easy_recv`, which go
/// through libcurl's TLS (and proxy tunnel) layers. Used on the I/O thread only.
private struct Link {
    let handle: UnsafeMutableRawPointer
    let fd: Int32
    let url: String

    /// Bytes written; 0 when the socket would block.
    func send(_ bytes: UnsafeRawBufferPointer) -> Result<Int, NetError> {
        guard !bytes.isEmpty else { return .success(0) }
        var sent = 0
        let code = tether_curl_send(handle, bytes.baseAddress, bytes.count, &sent)
        switch code {
        case CURLE_OK: return .success(sent)
        case CURLE_AGAIN: return .success(0)
        default: return .failure(NetError(.interrupted, url: url, detail: "send: \(String(cString: curl_easy_strerror(code)))"))
        }
    }

    /// Bytes read; 0 at end of stream, nil when nothing is ready.
    func receive(_ buffer: UnsafeMutableRawBufferPointer) -> Result<Int?, NetError> {
        var received = 0
        let code = tether_curl_recv(handle, buffer.baseAddress, buffer.count, &received)
        switch code {
        case CURLE_OK: return .success(received)
        case CURLE_AGAIN: return .success(nil)
        default: return .failure(NetError(.interrupted, url: url, detail: "receive: \(String(cString: curl_easy_strerror(code)))"))
        }
    }
}
