import CLibSSH2
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The forwarding event loop over one established SSH session. It runs on the tunnel's own thread,
/// which alone touches the session and its channels, and waits in poll(2) on the wake pipe, the
/// SSH socket (write interest from `libssh2_session_block_directions`), the listener and every
/// local socket that has something to do. After each wake-up it services every connection until a
/// pass moves nothing, because one libssh2 call may queue data for any channel.
final class LocalForwarder {
    enum Ending: Equatable {
        case stopped
        case sessionLost(String)
    }

    /// A libssh2 call in progress. libssh2 1.10 keeps at most one half-sent packet: until the call
    /// that left it is repeated, every other send fails with LIBSSH2_ERROR_BAD_USE. So when a call
    /// leaves the session blocked outbound, it is recorded here and repeated before anything else.
    private enum Operation {
        case open(ForwardedConnection)
        /// An exec target's command, on the connection's freshly opened session channel.
        case startCommand(ForwardedConnection)
        /// A throwaway open of an unknown channel type: the only libssh2 call that reads the
        /// transport when no channel exists (answering the server's keepalive probes, rekeying).
        case drainOpen
        /// A zero-length read: makes libssh2 read the transport without taking any channel's data.
        case pumpTransport
        case write(ForwardedConnection)
        case sendEOF(ForwardedConnection)
        case read(ForwardedConnection)
        /// After the target's EOF, with our side still open: whether the channel's CLOSE came
        /// too (libssh2 1.10 has no getter for it; a non-blocking wait reads the transport).
        case checkClosed(ForwardedConnection)
        case close(ForwardedConnection)
    }

    private enum StepResult {
        case progress
        case idle
        /// A packet is half-sent: nothing else may touch the session until the socket is writable.
        case stalled
        case lost(String)
    }

    private enum OpenSlot {
        case connection(ForwardedConnection)
        case drain
    }

    private static let chunkSize = 64 * 1024
    private static let maximumPasses = 32
    private static let drainChannelType = "drain@tether"
    /// LIBSSH2_CHANNEL_WINDOW_DEFAULT and LIBSSH2_CHANNEL_PACKET_DEFAULT (not imported: parenthesised expressions).
    private static let windowSize: UInt32 = 2 * 1024 * 1024
    private static let packetSize: UInt32 = 32768

    private let session: SSHSession
    private let listener: LoopbackListener
    private let control: TunnelControl
    private let configuration: SSHTunnel.Configuration
    private let logger: Logger
    private let counter: ConnectionCounter

    private var connections: [ForwardedConnection] = []
    /// libssh2 opens one channel at a time per session (its open state is session-wide).
    private var openSlot: OpenSlot?
    private var stalled: Operation?
    private var sshReadable = false
    private var keepaliveDue: ContinuousClock.Instant?
    private var acceptPausedUntil: ContinuousClock.Instant?
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: LocalForwarder.chunkSize, alignment: 16)

    init(session: SSHSession, listener: LoopbackListener, control: TunnelControl,
         configuration: SSHTunnel.Configuration, logger: Logger, counter: ConnectionCounter) {
        self.session = session
        self.listener = listener
        self.control = control
        self.configuration = configuration
        self.logger = logger
        self.counter = counter
    }

    deinit { scratch.deallocate() }

    func run() -> Ending {
        defer { closeEverything() }
        if configuration.keepalive > 0 { keepaliveDue = .now }
        while true {
            if control.isStopRequested { return .stopped }
            var busy = false
            for _ in 0..<Self.maximumPasses {
                switch servicePass() {
                case .lost(let reason): return .sessionLost(reason)
                case .progress: busy = true; continue
                case .idle, .stalled: busy = false
                }
                break
            }
            // Still busy after the pass budget: look at the sockets without sleeping.
            if let reason = waitForEvents(sleep: !busy) { return .sessionLost(reason) }
        }
    }

    // MARK: Waiting

    /// One poll(2). Returns a reason when the SSH connection is gone.
    private func waitForEvents(sleep: Bool) -> String? {
        let now = ContinuousClock.now
        let keepaliveIsDue = keepaliveDue.map { $0 <= now } ?? false
        // While an operation's own packet is half-sent, repeating it is all that may happen, and
        // it reads nothing: input waiting on the socket would wake us at once, pass after pass,
        // until the packet is out. Then only writability (or libssh2 asking to read) matters.
        var sshEvents = Self.readsTransport(stalled) || session.blockedInbound ? Int16(POLLIN) : 0
        if session.blockedOutbound || keepaliveIsDue { sshEvents |= Int16(POLLOUT) }

        if let until = acceptPausedUntil, until <= now { acceptPausedUntil = nil }
        var fds = [
            pollfd(fd: control.wakeFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: session.socket, events: sshEvents, revents: 0),
            pollfd(fd: acceptPausedUntil == nil ? listener.fd : -1, events: Int16(POLLIN), revents: 0),
        ]
        // While a packet is half-sent nothing but that packet may move, so local sockets wait too
        // (a writable one would otherwise wake us again and again).
        for connection in connections where stalled == nil && connection.phase == .forwarding && connection.fd >= 0 {
            var events: Int16 = 0
            if connection.toRemote.isEmpty && !connection.localEOF { events |= Int16(POLLIN) }
            if !connection.toLocal.isEmpty { events |= Int16(POLLOUT) }
            // A socket with no interest stays out: POLLHUP would otherwise wake us forever.
            if events != 0 { fds.append(pollfd(fd: connection.fd, events: events, revents: 0)) }
        }

        var timeout: Int32 = sleep ? -1 : 0
        if sleep, let due = keepaliveDue, !keepaliveIsDue { timeout = Self.milliseconds(until: due, from: now) }
        if sleep, let until = acceptPausedUntil {
            let pause = Self.milliseconds(until: until, from: now)
            timeout = timeout < 0 ? pause : min(timeout, pause)
        }

        session.acknowledgePromptly()
        let rc = poll(&fds, nfds_t(fds.count), timeout)
        if rc < 0 {
            if errno == EINTR { return nil }
            return "poll failed: \(SocketIO.errnoText())"
        }
        if fds[0].revents != 0 { control.drainWake() }

        let ssh = fds[1].revents
        if ssh & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(session.socket, SOL_SOCKET, SO_ERROR, &code, &length)
            return code != 0 ? "the connection to the SSH server failed: \(SocketIO.errnoText(code))"
                : "the SSH server closed the connection"
        }
        if ssh & Int16(POLLIN) != 0 { sshReadable = true }
        if keepaliveIsDue && ssh & Int16(POLLOUT) != 0 && stalled == nil {
            if let reason = sendKeepalive() { return reason }
        }
        if fds[2].revents != 0 { acceptConnections() }
        return nil
    }

    private static func milliseconds(until instant: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
        Int32(clamping: max(0, now.duration(to: instant).milliseconds + 1))
    }

    /// Sent only when poll said the socket is writable and no packet is half-sent:
    /// libssh2_keepalive_send swallows EAGAIN and keeps its packet on its own stack, so a partial
    /// keepalive could never be resumed.
    private func sendKeepalive() -> String? {
        var next: Int32 = 0
        if libssh2_keepalive_send(session.raw, &next) != 0 {
            return "sending a keepalive failed: \(session.lastErrorMessage)"
        }
        if session.blockedOutbound {
            return "a keepalive was only partly sent, which libssh2 1.10 cannot resume"
        }
        keepaliveDue = .now + .seconds(max(1, Int(next)))
        return nil
    }

    private func acceptConnections() {
        for _ in 0..<64 {
            switch listener.accept() {
            case .connection(let fd):
                let connection = ForwardedConnection(id: counter.next(), fd: fd)
                connections.append(connection)
                logger.debug("accepted a local connection", metadata: ["connection": "\(connection.id)"])
            case .none:
                return
            case .exhausted(let reason):
                logger.error("cannot accept local connections: \(reason); pausing accepts for a second")
                acceptPausedUntil = .now + .seconds(1)
                return
            }
        }
    }

    // MARK: Servicing

    private func servicePass() -> StepResult {
        let receivedBefore = session.bytesReceived
        var progressed = false
        func note(_ result: StepResult) -> StepResult? {
            switch result {
            case .progress: progressed = true; return nil
            case .idle: return nil
            case .stalled, .lost: return result
            }
        }

        if let operation = stalled {
            stalled = nil
            if let stop = note(step(operation)) { return stop }
        }

        if sshReadable {
            sshReadable = false
            if connections.contains(where: { $0.phase == .forwarding }) {
                if let stop = note(step(.pumpTransport)) { return stop }
            } else if openSlot == nil && !connections.contains(where: { $0.phase != .finished }) {
                // No call of ours will read the socket (an open or a close would): drain it.
                openSlot = .drain
            }
        }

        if openSlot == nil, let next = connections.first(where: { $0.phase == .awaitingChannel }) {
            openSlot = .connection(next)
        }
        switch openSlot {
        case .connection(let connection): if let stop = note(step(.open(connection))) { return stop }
        case .drain: if let stop = note(step(.drainOpen)) { return stop }
        case nil: break
        }

        for connection in connections {
            switch connection.phase {
            case .forwarding:
                if let stop = note(service(connection)) { return stop }
            case .startingCommand:
                if let stop = note(step(.startCommand(connection))) { return stop }
            case .closingChannel:
                if let stop = note(step(.close(connection))) { return stop }
            case .awaitingChannel, .finished:
                break
            }
        }
        connections.removeAll { $0.phase == .finished }
        // Packets read by a call late in the pass may unblock a call made earlier in it.
        return progressed || session.bytesReceived != receivedBefore ? .progress : .idle
    }

    /// Moves what it can for one forwarding connection, in both directions.
    private func service(_ connection: ForwardedConnection) -> StepResult {
        var progressed = false
        func note(_ result: StepResult) -> StepResult? {
            switch result {
            case .progress: progressed = true; return nil
            case .idle: return nil
            case .stalled, .lost: return result
            }
        }

        // Client → channel.
        if connection.toRemote.isEmpty && !connection.localEOF && connection.fd >= 0 {
            switch SocketIO.receive(connection.fd, into: scratch) {
            case .bytes(let count):
                connection.toRemote.append(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
                progressed = true
            case .endOfStream:
                connection.localEOF = true
                progressed = true
            case .wouldBlock:
                break
            case .failed(let code):
                abort(connection, because: "the local client's socket failed: \(SocketIO.errnoText(code))")
                return .progress
            }
        }
        if !connection.toRemote.isEmpty {
            if let stop = note(step(.write(connection))) { return stop }
        }
        if connection.phase == .forwarding && connection.toRemote.isEmpty && connection.localEOF && !connection.channelEOFSent {
            if let stop = note(step(.sendEOF(connection))) { return stop }
        }

        // Channel → client.
        if connection.phase == .forwarding && connection.toLocal.isEmpty && !connection.remoteEOF {
            if let stop = note(step(.read(connection))) { return stop }
        }
        if connection.phase == .forwarding && !connection.toLocal.isEmpty {
            let sent = connection.toLocal.withReadableBytes { SocketIO.send(connection.fd, $0) }
            switch sent {
            case .bytes(let count):
                connection.toLocal.consume(count)
                connection.bytesDown += count
                progressed = true
            case .wouldBlock, .endOfStream:
                break
            case .failed(let code):
                abort(connection, because: "the local client's socket failed: \(SocketIO.errnoText(code))")
                return .progress
            }
        }
        if connection.phase == .forwarding && connection.toLocal.isEmpty && connection.remoteEOF && !connection.localWriteShut {
            connection.shutdownLocalWrite()
            progressed = true
        }
        // The target's EOF alone is a half-close (it may still read). Its CLOSE means what the
        // client still sends can go nowhere: the window never reopens, and waiting for our own
        // EOF would keep the connection (its socket, its channel) for as long as the client lives.
        if connection.phase == .forwarding && connection.localWriteShut && !connection.channelEOFSent {
            if let stop = note(step(.checkClosed(connection))) { return stop }
        }

        if connection.phase == .forwarding && connection.isComplete {
            logger.debug("local connection finished", metadata: [
                "connection": "\(connection.id)", "up": "\(connection.bytesUp)", "down": "\(connection.bytesDown)",
            ])
            connection.closeLocal()
            connection.phase = .closingChannel
            progressed = true
        }
        return progressed ? .progress : .idle
    }

    /// Whether the next pass reads the SSH socket: always, unless an operation other than a
    /// transport pump must be repeated first (`stalled`).
    private static func readsTransport(_ stalled: Operation?) -> Bool {
        switch stalled {
        case nil, .pumpTransport?, .checkClosed?: true
        default: false
        }
    }

    /// Runs one libssh2 operation and applies the half-sent-packet rule.
    private func step(_ operation: Operation) -> StepResult {
        let result = perform(operation)
        if case .lost = result { return result }
        guard session.blockedOutbound else { return result }
        switch result {
        case .idle:
            // The operation's own packet is half-sent: it must be repeated as is.
            stalled = operation
        default:
            // It finished, but a reply libssh2 sends while reading is half-sent; any transport
            // read resumes that.
            stalled = .pumpTransport
        }
        return .stalled
    }

    private func perform(_ operation: Operation) -> StepResult {
        let raw = session.raw
        switch operation {
        case .open(let connection):
            let channel = configuration.targetCommand == nil
                ? libssh2_channel_direct_tcpip_ex(raw, configuration.targetHost, Int32(configuration.targetPort),
                                                  LoopbackListener.host, Int32(connection.peerPort))
                : tether_ssh2_channel_open_session(raw, Self.windowSize, Self.packetSize)
            if let channel {
                openSlot = nil
                connection.channel = channel
                connection.phase = configuration.targetCommand == nil ? .forwarding : .startingCommand
                logger.debug("opened a channel", metadata: ["connection": "\(connection.id)", "target": "\(configuration.target)"])
                return .progress
            }
            let code = session.lastErrorCode
            if code == LIBSSH2_ERROR_EAGAIN { return .idle }
            openSlot = nil
            guard Self.isChannelLevel(code) else { return .lost("opening a channel failed: \(session.lastErrorMessage)") }
            logger.warning("the SSH server would not forward a local connection; closed it", metadata: [
                "connection": "\(connection.id)",
                "target": "\(configuration.target)",
                "reason": "\(session.lastErrorMessage)",
            ])
            connection.abortLocal()
            connection.phase = .finished
            return .progress

        case .startCommand(let connection):
            guard let channel = connection.channel, let command = configuration.targetCommand else { return .idle }
            let rc = tether_ssh2_channel_exec(channel, command)
            if rc == 0 {
                connection.phase = .forwarding
                logger.debug("started the command on the channel", metadata: ["connection": "\(connection.id)"])
                return .progress
            }
            if rc == LIBSSH2_ERROR_EAGAIN { return .idle }
            guard Self.isChannelLevel(rc) else { return .lost("starting the command failed: \(session.lastErrorMessage)") }
            logger.warning("the SSH server would not run the command for a local connection; closed it", metadata: [
                "connection": "\(connection.id)", "command": "\(command)", "reason": "\(session.lastErrorMessage)",
            ])
            connection.abortLocal()
            connection.phase = .closingChannel
            return .progress

        case .drainOpen:
            let type = Self.drainChannelType
            let channel = libssh2_channel_open_ex(raw, type, UInt32(type.utf8.count), Self.windowSize,
                                                  Self.packetSize, nil, 0)
            if let channel {
                // No server should accept it; if one does, close it like any other channel.
                openSlot = nil
                let stray = ForwardedConnection(id: counter.next(), fd: -1)
                stray.channel = channel
                stray.phase = .closingChannel
                connections.append(stray)
                return .progress
            }
            let code = session.lastErrorCode
            if code == LIBSSH2_ERROR_EAGAIN { return .idle }
            openSlot = nil
            logger.trace("drained the SSH transport with no channel open")
            return Self.isChannelLevel(code) ? .progress : .lost("reading from the SSH server failed: \(session.lastErrorMessage)")

        case .pumpTransport:
            guard let channel = connections.first(where: { $0.phase == .forwarding })?.channel else {
                return .lost("libssh2 left a packet half-sent with no channel left to finish it")
            }
            let rc = tether_ssh2_channel_read(channel, scratch.baseAddress!.assumingMemoryBound(to: CChar.self), 0)
            if rc >= 0 || rc == LIBSSH2_ERROR_EAGAIN || Self.isChannelLevel(Int32(rc)) { return .idle }
            return .lost("reading from the SSH server failed: \(session.lastErrorMessage)")

        case .write(let connection):
            guard let channel = connection.channel else { return .idle }
            let written = connection.toRemote.withReadableBytes {
                tether_ssh2_channel_write(channel, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
            }
            if written > 0 {
                connection.toRemote.consume(written)
                connection.bytesUp += written
                return .progress
            }
            return failure(Int32(written), on: connection, doing: "writing to the channel")

        case .sendEOF(let connection):
            guard let channel = connection.channel else { return .idle }
            let rc = libssh2_channel_send_eof(channel)
            if rc == 0 {
                connection.channelEOFSent = true
                return .progress
            }
            return failure(rc, on: connection, doing: "sending EOF on the channel")

        case .read(let connection):
            guard let channel = connection.channel else { return .idle }
            let count = tether_ssh2_channel_read(channel, scratch.baseAddress!.assumingMemoryBound(to: CChar.self), scratch.count)
            if count > 0 {
                connection.toLocal.append(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
                return .progress
            }
            if count == 0 || count == LIBSSH2_ERROR_EAGAIN {
                if tether_ssh2_channel_eof(channel) == 1 {
                    connection.remoteEOF = true
                    return .progress
                }
                return .idle
            }
            return failure(Int32(count), on: connection, doing: "reading from the channel")

        case .checkClosed(let connection):
            guard let channel = connection.channel else { return .idle }
            let rc = libssh2_channel_wait_closed(channel)
            // INVAL: not at EOF after all (libssh2 clears it when data follows); nothing to do.
            if rc == LIBSSH2_ERROR_INVAL { return .idle }
            if rc != 0 { return failure(rc, on: connection, doing: "waiting for the channel's close") }
            // As `ssh -L` does: everything the target sent was delivered, so close the client's
            // socket (what it sent and we did not read resets it) and close the channel back.
            logger.debug("the target closed while the local client was still connected; closed it", metadata: [
                "connection": "\(connection.id)", "up": "\(connection.bytesUp)", "down": "\(connection.bytesDown)",
                "unsent": "\(connection.toRemote.count)",
            ])
            connection.toRemote.removeAll()
            connection.closeLocal()
            connection.phase = .closingChannel
            return .progress

        case .close(let connection):
            guard let channel = connection.channel else {
                connection.phase = .finished
                return .progress
            }
            let rc = libssh2_channel_close(channel)
            if rc == LIBSSH2_ERROR_EAGAIN { return .idle }
            if rc != 0 && !Self.isChannelLevel(rc) {
                return .lost("closing a channel failed: \(session.lastErrorMessage)")
            }
            if libssh2_channel_free(channel) == LIBSSH2_ERROR_EAGAIN { return .idle }
            connection.channel = nil
            connection.closeLocal()
            connection.phase = .finished
            return .progress
        }
    }

    /// EAGAIN (or nothing written) waits; a channel-level error ends that connection; anything
    /// else means the session is gone.
    private func failure(_ code: Int32, on connection: ForwardedConnection, doing what: String) -> StepResult {
        if code == 0 || code == LIBSSH2_ERROR_EAGAIN { return .idle }
        if Self.isChannelLevel(code) {
            abort(connection, because: "\(what) failed: \(session.lastErrorMessage)")
            return .progress
        }
        return .lost("\(what) failed: \(session.lastErrorMessage)")
    }

    private func abort(_ connection: ForwardedConnection, because reason: String) {
        logger.debug("closing a local connection", metadata: ["connection": "\(connection.id)", "reason": "\(reason)"])
        connection.abortLocal()
        connection.phase = connection.channel == nil ? .finished : .closingChannel
    }

    private static func isChannelLevel(_ code: Int32) -> Bool {
        (LIBSSH2_ERROR_ZLIB...LIBSSH2_ERROR_CHANNEL_OUTOFORDER).contains(code)
            || code == LIBSSH2_ERROR_CHANNEL_WINDOW_FULL || code == LIBSSH2_ERROR_REQUEST_DENIED
    }

    /// Resets every local connection; their channels go with the session.
    private func closeEverything() {
        let open = connections.filter { $0.fd >= 0 }
        if !open.isEmpty {
            logger.info("closed \(open.count) local connection(s) in flight; clients must reconnect")
        }
        for connection in connections {
            connection.abortLocal()
            connection.channel = nil
            connection.phase = .finished
        }
        connections = []
    }
}

/// Numbers connections across sessions, for logs.
final class ConnectionCounter {
    private var last = 0
    func next() -> Int {
        last += 1
        return last
    }
}
