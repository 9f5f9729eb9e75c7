import Foundation
import Logging
import Synchronization
import TetherStreaming

/// A TCP connection that carries one message per line (CodexMonitor's JSON lines).
///
/// Sockets are plain POSIX: a non-blocking connect bounded by a timeout, then one I/O thread per
/// connection that `poll`s the socket and a wake pipe, so blocking never happens on Swift's
/// cooperative pool. The lines of one read go to the consumer as one batch through a
/// `BatchChannel` weighed in bytes; the thread reads only while the channel has room (it also
/// writes, so it never blocks on it): once half of `bufferedBytes` of lines wait — the other
/// half is the batch the consumer is working through — it stops reading, TCP pushes back on the
/// peer, and the consumer's next take wakes it. A line longer than `maxLineLength` is never
/// buffered (``LineFramer`` drops it): it ends the connection with `NetError(.tooLarge)`, so
/// memory stays bounded by the limit plus one read.
public final class TCPLineConnection: LineConnection {
    /// `host:port` (`[v6]:port`), as NetError's `url` and in messages.
    public let endpoint: String
    public let maxLineLength: Int

    private let fd: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let logger: Logger
    private let state = Mutex(State())
    /// Received lines, one batch per read, weighed in bytes.
    private let incoming: BatchChannel<[UInt8]>
    /// The consumer's current batch (one reader at a time).
    private let inbox = Mutex(Inbox())

    private static let readChunk = 64 << 10

    /// Connects to `host:port`, giving up after `timeout`.
    /// - Parameters:
    ///   - maxLineLength: the longest line accepted, in bytes; a longer one fails the connection.
    ///   - bufferedBytes: how many bytes of received lines may wait for `receive()` before reading pauses.
    public static func connect(host: String, port: Int, timeout: Duration = .seconds(10), maxLineLength: Int = 1 << 20,
                               bufferedBytes: Int = 1 << 20, logger: Logger) async throws(NetError) -> TCPLineConnection {
        let endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        guard (1...65_535).contains(port) else {
            throw NetError(.connect, url: endpoint, detail: "port \(port) is out of range")
        }
        guard maxLineLength > 0 else {
            throw NetError(.other, url: endpoint, detail: "maxLineLength must be positive")
        }
        logger.debug("TCP connect", metadata: ["endpoint": "\(endpoint)"])
        let flag = CancelFlag()
        let deadline = ContinuousClock.now + timeout
        let result: Result<Int32, NetError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // getaddrinfo and the connect wait block: a thread of their own, not the pool.
                let thread = Thread {
                    continuation.resume(returning: TCPSocket.connect(host: host, port: port, deadline: deadline,
                                                                     endpoint: endpoint, cancelled: flag.value))
                }
                thread.name = "tether.tcp.connect"
                thread.start()
            }
        } onCancel: {
            flag.value.store(true, ordering: .relaxed)
        }
        let fd = try result.get()
        guard let wake = TCPSocket.makeWakePipe() else {
            _ = TCPSocket.systemClose(fd)
            throw NetError(.other, url: endpoint, detail: "cannot create a pipe: \(TCPSocket.errorText())")
        }
        let connection = TCPLineConnection(fd: fd, wake: wake, endpoint: endpoint, maxLineLength: maxLineLength,
                                           bufferLimit: Swift.max(1, bufferedBytes), logger: logger)
        connection.startIO()
        logger.debug("TCP connected", metadata: ["endpoint": "\(endpoint)"])
        return connection
    }

    /// Takes over a connected stream socket (one end of a `socketpair` whose other end is a
    /// child process's stdin and stdout, say): the same framing and bounds as a TCP connection.
    /// The connection owns `fd` from now on and closes it; on failure it is closed here.
    public static func adopt(socket fd: Int32, endpoint: String, maxLineLength: Int = 1 << 20, bufferedBytes: Int = 1 << 20,
                             logger: Logger) throws(NetError) -> TCPLineConnection {
        guard maxLineLength > 0, TCPSocket.setNonBlocking(fd), let wake = TCPSocket.makeWakePipe() else {
            let detail = TCPSocket.errorText()
            _ = TCPSocket.systemClose(fd)
            throw NetError(.other, url: endpoint, detail: "cannot take over the socket: \(detail)")
        }
        TCPSocket.setCloseOnExec(fd)
        let connection = TCPLineConnection(fd: fd, wake: wake, endpoint: endpoint, maxLineLength: maxLineLength,
                                           bufferLimit: Swift.max(1, bufferedBytes), logger: logger)
        connection.startIO()
        return connection
    }

    private init(fd: Int32, wake: (read: Int32, write: Int32), endpoint: String, maxLineLength: Int, bufferLimit: Int,
                 logger: Logger) {
        self.fd = fd
        wakeRead = wake.read
        wakeWrite = wake.write
        self.endpoint = endpoint
        self.maxLineLength = maxLineLength
        self.logger = logger
        incoming = BatchChannel(capacity: Swift.max(1, bufferLimit / 2))
    }

    // MARK: LineConnection

    public func send(_ line: [UInt8]) async throws {
        guard !line.contains(.lf) else {
            throw NetError(.other, url: endpoint, detail: "a line to send contains a line feed")
        }
        var bytes = line
        bytes.append(.lf)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let refused: NetError? = state.withLock { state in
                guard state.end == nil, !state.closeRequested else {
                    return NetError(.interrupted, url: endpoint, detail: "the connection is closed")
                }
                state.writes.append(PendingWrite(bytes: bytes, continuation: continuation))
                wake(&state)
                return nil
            }
            if let refused { continuation.resume(throwing: refused) }
        }
    }

    public func receive() async throws -> [UInt8]? {
        if let line = inbox.withLock({ $0.take() }) { return line }
        guard let batch = try await nextBatch() else { return nil }
        return inbox.withLock { inbox in
            inbox.hold(batch)
            return inbox.take()
        }
    }

    /// The lines the consumer has not taken yet: the rest of its current batch, or everything one
    /// read (or several, when the consumer was behind) brought. Cancelling the task ends this
    /// wait with CancellationError; the connection and its lines stay for the next call.
    public func receiveBatch() async throws -> [[UInt8]]? {
        if let rest = inbox.withLock({ $0.takeAll() }) { return rest }
        return try await nextBatch()
    }

    /// Throws the `NetError` that ended the connection (after every line read before it).
    private func nextBatch() async throws -> [[UInt8]]? {
        try await incoming.next(cancellation: .endsWaitOnly)
    }

    public func close() {
        state.withLock { state in
            guard !state.closeRequested else { return }
            state.closeRequested = true
            wake(&state)
        }
    }

    /// The lines as an async sequence (one iteration at a time), ending when `receive()` does.
    public var lines: Lines { Lines(connection: self) }

    public struct Lines: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        let connection: TCPLineConnection
        public func makeAsyncIterator() -> Iterator { Iterator(connection: connection) }

        public struct Iterator: AsyncIteratorProtocol {
            let connection: TCPLineConnection
            public mutating func next() async throws -> [UInt8]? { try await connection.receive() }
        }
    }

    /// The most bytes ever held for this connection (received lines waiting in the channel, plus
    /// a partial line): the memory bound the tests check. The consumer's current batch comes on
    /// top, at most what the channel held when it was taken.
    var peakBufferedBytes: Int { state.withLock { $0.peakBuffered } }

    // MARK: State shared by the I/O thread and callers

    fileprivate enum End {
        case clean
        case failed(NetError)
    }

    fileprivate struct PendingWrite {
        var bytes: [UInt8]
        var offset = 0
        let continuation: CheckedContinuation<Void, any Error>
    }

    fileprivate struct State {
        var peakBuffered = 0
        /// Set once the connection has ended (writes are refused after it).
        var end: End?
        var writes: [PendingWrite] = []
        var closeRequested = false
        /// The wake pipe is open (the I/O thread closes it on its way out).
        var ioRunning = true
    }

    /// The batch the consumer took from the channel, handed out a line at a time.
    fileprivate struct Inbox {
        var lines: [[UInt8]] = []
        var head = 0

        mutating func hold(_ batch: [[UInt8]]) {
            lines = batch
            head = 0
        }

        mutating func take() -> [UInt8]? {
            guard head < lines.count else { return nil }
            let line = lines[head]
            lines[head] = []  // released now, not with the batch
            head += 1
            if head == lines.count { hold([]) }
            return line
        }

        mutating func takeAll() -> [[UInt8]]? {
            guard head < lines.count else { return nil }
            defer { hold([]) }
            return head == 0 ? lines : Array(lines[head...])
        }
    }

    /// Wakes the I/O thread's poll. Called with the lock held, so the pipe cannot be closed meanwhile.
    private func wake(_ state: inout State) {
        guard state.ioRunning else { return }
        TCPSocket.signal(wakeWrite)  // a full pipe is fine: the thread is awake already
    }

    // MARK: The I/O thread

    private func startIO() {
        let thread = Thread { [self] in runIO() }
        thread.name = "tether.tcp"
        thread.start()
    }

    private func runIO() {
        var framer = LineFramer(maxLineLength: maxLineLength)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readChunk, alignment: 1)
        defer { chunk.deallocate() }
        var ending: End = .clean
        var gate = ReadGate(channel: incoming) { [self] in state.withLock { wake(&$0) } }

        loop: while true {
            let (wantWrite, closing) = state.withLock { state in (!state.writes.isEmpty, state.closeRequested) }
            if closing { break }
            // Read only what the consumer has room for: the gate wakes us when it has again.
            let wantRead = gate.mayRead()
            // Leave the socket out of the poll when we want nothing from it: POLLHUP is always
            // reported, and would spin the loop while the consumer is behind.
            var fds = [
                pollfd(fd: wantRead || wantWrite ? fd : -1,
                       events: Int16(wantRead ? POLLIN : 0) | Int16(wantWrite ? POLLOUT : 0), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                ending = .failed(NetError(.other, url: endpoint, detail: "poll(): \(TCPSocket.errorText())"))
                break
            }
            if fds[1].revents != 0 { drainWakePipe() }
            let revents = Int32(fds[0].revents)
            if revents & Int32(POLLNVAL) != 0 {
                ending = .failed(NetError(.interrupted, url: endpoint, detail: "the socket was closed"))
                break
            }
            if wantWrite, revents & Int32(POLLOUT | POLLERR | POLLHUP) != 0, let error = flushWrites() {
                ending = .failed(error)
                break
            }
            if wantRead, revents & Int32(POLLIN | POLLERR | POLLHUP) != 0 {
                let count = TCPSocket.systemRead(fd, chunk.baseAddress, chunk.count)
                if count > 0 {
                    if let failure = frame(UnsafeRawBufferPointer(rebasing: chunk[..<count]), &framer) {
                        ending = .failed(failure)
                        break loop
                    }
                } else if count == 0 {
                    switch framer.finish() {
                    case .clean:
                        ending = .clean
                    case .truncated:
                        ending = .failed(NetError(.interrupted, url: endpoint, detail: "the peer closed the connection in the middle of a line"))
                    }
                    break
                } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                    ending = .failed(NetError(.interrupted, url: endpoint, detail: TCPSocket.errorText()))
                    break
                }
            }
        }
        shutDown(ending)
    }

    /// Frames one read; returns the failure that ends the connection (a line over the limit).
    private func frame(_ bytes: UnsafeRawBufferPointer, _ framer: inout LineFramer) -> NetError? {
        var lines: [[UInt8]] = []
        var lineBytes = 0
        var tooLong = false
        framer.feed(bytes) { output in
            switch output {
            case .line(let line):
                if !tooLong {
                    lineBytes += line.count
                    lines.append(line)
                }
            case .lineTooLong: tooLong = true
            }
        }
        switch incoming.trySend(contentsOf: lines, weight: lineBytes, onRoom: {}) {
        case .accepted, .closed:
            break  // closed: nobody will read them (the consumer cancelled the channel)
        case .full:
            // Not with one producer that read only because there was room; were it ever, the
            // lines must still get through, in order.
            incoming.sendBlocking(contentsOf: lines, weight: lineBytes)
        }
        let held = incoming.bufferedWeight + framer.bufferedByteCount
        state.withLock { $0.peakBuffered = Swift.max($0.peakBuffered, held) }
        guard tooLong else { return nil }
        logger.warning("a line from \(endpoint) is longer than the limit; closing the connection",
                       metadata: ["limit": "\(maxLineLength)"])
        return NetError(.tooLarge, url: endpoint, detail: "a line is longer than the \(maxLineLength)-byte limit")
    }

    /// Writes what the socket takes now; returns the error that ends the connection.
    private func flushWrites() -> NetError? {
        let (done, failure): ([CheckedContinuation<Void, any Error>], NetError?) = state.withLock { state in
            var done: [CheckedContinuation<Void, any Error>] = []
            while !state.writes.isEmpty {
                let offset = state.writes[0].offset
                let written = state.writes[0].bytes.withUnsafeBytes { bytes in
                    TCPSocket.write(fd, UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                }
                if written < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { break }
                    return (done, NetError(.interrupted, url: endpoint, detail: "write: \(TCPSocket.errorText())"))
                }
                state.writes[0].offset += written
                if state.writes[0].offset == state.writes[0].bytes.count {
                    done.append(state.writes.removeFirst().continuation)
                }
            }
            return (done, nil)
        }
        for continuation in done { continuation.resume() }
        return failure
    }

    private func drainWakePipe() { TCPSocket.drain(wakeRead) }

    /// Ends the connection: records why, closes the descriptors and settles every waiter.
    private func shutDown(_ ending: End) {
        let (writes, end): ([PendingWrite], End) = state.withLock { state in
            if state.end == nil { state.end = ending }
            state.ioRunning = false
            let writes = state.writes
            state.writes = []
            return (writes, state.end!)
        }
        _ = TCPSocket.systemClose(fd)
        _ = TCPSocket.systemClose(wakeRead)
        _ = TCPSocket.systemClose(wakeWrite)
        if case .failed(let error) = end {
            logger.debug("TCP connection ended", metadata: ["endpoint": "\(endpoint)", "error": "\(error.detail)"])
        } else {
            logger.debug("TCP connection closed", metadata: ["endpoint": "\(endpoint)"])
        }
        let unsent: NetError
        if case .failed(let error) = end { unsent = error } else {
            unsent = NetError(.interrupted, url: endpoint, detail: "the connection closed before the line was sent")
        }
        for write in writes { write.continuation.resume(throwing: unsent) }
        // The consumer gets the lines already read, then the end.
        switch end {
        case .clean: incoming.finish()
        case .failed(let error): incoming.finish(throwing: error)
        }
    }
}

/// Set from a task's cancellation handler, read by a thread blocked in connect.
private final class CancelFlag: Sendable {
    let value = Atomic<Bool>(false)
}

extension UInt8 {
    fileprivate static let lf = UInt8(ascii: "\n")
}
