import CLibSSH2
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libssh2 session and its TCP socket, always in non-blocking mode. Owned and used by the
/// tunnel's loop thread only.
final class SSHSession {
    /// libssh2_init is not thread-safe; a static is initialised exactly once.
    private static let libraryStatus: Int32 = libssh2_init(0)

    let raw: OpaquePointer
    private(set) var socket: Int32 = -1
    private let control: TunnelControl
    private let serverName: String
    private var closed = false
    /// Bytes libssh2 has read from the socket: the session's `abstract` points here and our
    /// receive callback adds to it.
    private let receiveCounter = UnsafeMutablePointer<Int>.allocate(capacity: 1)

    init(control: TunnelControl, serverName: String) throws(SSHError) {
        guard Self.libraryStatus == 0, let raw = tether_ssh2_session_init() else {
            receiveCounter.deallocate()
            throw SSHError(.handshakeFailed, "could not initialise libssh2 (out of memory or a broken crypto backend)")
        }
        self.raw = raw
        self.control = control
        self.serverName = serverName
        receiveCounter.initialize(to: 0)
        libssh2_session_abstract(raw).pointee = UnsafeMutableRawPointer(receiveCounter)
        _ = libssh2_session_callback_set(raw, LIBSSH2_CALLBACK_RECV, unsafeBitCast(countingReceive, to: UnsafeMutableRawPointer.self))
        libssh2_session_set_blocking(raw, 0)
    }

    deinit {
        close(graceful: false)
        receiveCounter.deallocate()
    }

    /// Grows whenever libssh2 reads from the socket, whichever call made it read. Any call may
    /// read packets meant for other channels (data, window adjustments, EOF, open confirmations),
    /// so the loop keeps servicing until a pass reads nothing and moves nothing.
    var bytesReceived: Int { receiveCounter.pointee }

    // MARK: Errors

    var lastErrorCode: Int32 { libssh2_session_last_errno(raw) }

    var lastErrorMessage: String {
        var message: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        libssh2_session_last_error(raw, &message, &length, 0)
        guard let message else { return "unknown libssh2 error" }
        return String(cString: message)
    }

    var blockedOutbound: Bool { libssh2_session_block_directions(raw) & tether_ssh2_block_outbound() != 0 }
    var blockedInbound: Bool { libssh2_session_block_directions(raw) & tether_ssh2_block_inbound() != 0 }

    // MARK: Setup

    func preferHostKeyAlgorithms(_ algorithms: [String]) {
        _ = libssh2_session_method_pref(raw, LIBSSH2_METHOD_HOSTKEY, algorithms.joined(separator: ","))
    }

    /// Resolves and connects without blocking past `deadline` or a stop request.
    func connect(host: String, port: Int, deadline: ContinuousClock.Instant) throws(SSHError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no addresses" : String(cString: gai_strerror(status))
            throw SSHError(.connectFailed, "could not resolve SSH server \(serverName): \(reason); check `host`")
        }
        defer { freeaddrinfo(list) }

        var lastReason = "no usable address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = SocketIO.makeSocket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard fd >= 0 else { lastReason = SocketIO.errnoText(); continue }
            SocketIO.setCloseOnExec(fd)
            SocketIO.setNonBlocking(fd)
            if SocketIO.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                do {
                    try wait(on: fd, events: Int16(POLLOUT), until: deadline, doing: "connecting")
                } catch {
                    SocketIO.closeDescriptor(fd)
                    throw error
                }
                var soError: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
                if soError == 0 {
                    socket = fd
                    SocketIO.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
                    SocketIO.setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1)
                    return
                }
                lastReason = SocketIO.errnoText(soError)
            } else {
                lastReason = SocketIO.errnoText()
            }
            SocketIO.closeDescriptor(fd)
        }
        throw SSHError(.connectFailed,
                       "could not connect to SSH server \(serverName): \(lastReason); check that sshd runs there and `host`/`port` are right")
    }

    /// Bounds how long unacknowledged data (our keepalives, above all) may sit on a silent link
    /// before the kernel fails the socket: libssh2 does not track keepalive replies itself.
    func setDeadLinkTimeout(seconds: Int) {
        #if canImport(Glibc)
        SocketIO.setOption(socket, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, Int32(seconds * 1000))
        #endif
    }

    /// Re-arms quick ACKs (Linux resets them as it sees fit). OpenSSH's sshd leaves Nagle on for
    /// sessions without a pty, so its second small packet (a channel's EOF after its last data)
    /// waits for our ACK; with delayed ACKs that is 40 ms per exchange.
    func acknowledgePromptly() {
        #if canImport(Glibc)
        SocketIO.setOption(socket, Int32(IPPROTO_TCP), TCP_QUICKACK, 1)
        #endif
    }

    func handshake(deadline: ContinuousClock.Instant) throws(SSHError) {
        let rc = try drive(until: deadline, doing: "the SSH handshake") { libssh2_session_handshake(raw, socket) }
        if rc != 0 {
            throw SSHError(.handshakeFailed,
                           "SSH handshake with \(serverName) failed: \(lastErrorMessage). The server may offer no algorithm libssh2 1.10 supports (it needs an ed25519 or ecdsa host key), or it is not an SSH server")
        }
    }

    /// `libssh2_keepalive_send` ignores replies, so ask for none: unsolicited
    /// SSH_MSG_REQUEST_FAILURE replies would pile up in libssh2's packet queue forever.
    func configureKeepalive(seconds: Int) {
        libssh2_keepalive_config(raw, 0, UInt32(seconds))
    }

    // MARK: Driving non-blocking calls during setup

    /// Calls `operation` until it stops answering EAGAIN, waiting on the socket in between in the
    /// direction libssh2 asks for, and giving up at `deadline` or on a stop request.
    func drive(until deadline: ContinuousClock.Instant, doing what: String, _ operation: () -> Int32) throws(SSHError) -> Int32 {
        while true {
            let rc = operation()
            if rc != LIBSSH2_ERROR_EAGAIN { return rc }
            try waitForSession(until: deadline, doing: what)
        }
    }

    /// The same for calls that return a pointer and report EAGAIN through the session's errno.
    func drivePointer<T>(until deadline: ContinuousClock.Instant, doing what: String, _ operation: () -> T?) throws(SSHError) -> T? {
        while true {
            if let result = operation() { return result }
            if lastErrorCode != LIBSSH2_ERROR_EAGAIN { return nil }
            try waitForSession(until: deadline, doing: what)
        }
    }

    private func waitForSession(until deadline: ContinuousClock.Instant, doing what: String) throws(SSHError) {
        var events: Int16 = 0
        if blockedInbound { events |= Int16(POLLIN) }
        if blockedOutbound { events |= Int16(POLLOUT) }
        if events == 0 { events = Int16(POLLIN) }
        try wait(on: socket, events: events, until: deadline, doing: what)
    }

    private func wait(on fd: Int32, events: Int16, until deadline: ContinuousClock.Instant, doing what: String) throws(SSHError) {
        var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: control.wakeFD, events: Int16(POLLIN), revents: 0)]
        while true {
            if control.isStopRequested { throw SSHError(.stopped, "the SSH tunnel was stopped while \(what)") }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw SSHError(.handshakeFailed,
                               "timed out while \(what) with \(serverName); check that the server is reachable and answers SSH")
            }
            let rc = poll(&fds, nfds_t(fds.count), Int32(clamping: remaining.milliseconds + 1))
            if rc < 0 && errno != EINTR {
                throw SSHError(.connectFailed, "poll failed while \(what): \(SocketIO.errnoText())")
            }
            if fds[1].revents != 0 { control.drainWake() }
            if control.isStopRequested { throw SSHError(.stopped, "the SSH tunnel was stopped while \(what)") }
            if fds[0].revents != 0 { return }
        }
    }

    // MARK: Teardown

    /// Ends the session. `graceful` sends SSH_MSG_DISCONNECT first (bounded to a second); either
    /// way the socket is shut down before libssh2 frees the session, so freeing its channels can
    /// only fail fast, never wait on a dead peer.
    func close(graceful: Bool) {
        guard !closed else { return }
        closed = true
        if graceful && socket >= 0 && !blockedOutbound {
            let deadline = ContinuousClock.now + .seconds(1)
            _ = try? drive(until: deadline, doing: "disconnecting") {
                tether_ssh2_session_disconnect(raw, "tether tunnel closed")
            }
        }
        if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        libssh2_session_free(raw)
        if socket >= 0 { SocketIO.closeDescriptor(socket) }
        socket = -1
    }
}

/// libssh2's default receive (`_libssh2_recv`: recv, errors as -errno) plus a byte count kept
/// where the session's abstract pointer points.
private let countingReceive: @convention(c) (
    Int32, UnsafeMutableRawPointer?, Int, Int32, UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> Int = { socket, buffer, length, flags, abstract in
    let count = recv(socket, buffer, length, flags)
    if count < 0 {
        let code = errno
        return -Int(code == EWOULDBLOCK ? EAGAIN : code)
    }
    abstract?.pointee?.assumingMemoryBound(to: Int.self).pointee += count
    return count
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
