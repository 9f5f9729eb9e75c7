#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The POSIX calls behind `TCPLineConnection`: name resolution and a connect bounded by a
/// deadline (non-blocking `connect` + `poll`). They block, so they run on the connection's own
/// threads, never on Swift's cooperative pool.
enum TCPSocket {
    /// How often a blocked connect looks at the cancel flag.
    private static let pollSlice: Int32 = 100

    /// Resolves `host` and connects to the first address that answers before `deadline`.
    /// Returns a non-blocking, close-on-exec socket with TCP_NODELAY set.
    static func connect(host: String, port: Int, deadline: ContinuousClock.Instant, endpoint: String,
                        cancelled: borrowing Atomic<Bool>) -> Result<Int32, NetError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = socketStream
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            return .failure(NetError(.connect, url: endpoint, detail: "cannot resolve \(host): \(reason)"))
        }
        defer { freeaddrinfo(list) }

        var lastError = NetError(.connect, url: endpoint, detail: "no usable address for \(host)")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            switch attempt(info.pointee, deadline: deadline, endpoint: endpoint, cancelled: cancelled) {
            case .success(let fd):
                return .success(fd)
            case .failure(let error):
                lastError = error
                if error.kind == .timeout || error.kind == .cancelled { return .failure(error) }
            }
        }
        return .failure(lastError)
    }

    private static func attempt(_ info: addrinfo, deadline: ContinuousClock.Instant, endpoint: String,
                                cancelled: borrowing Atomic<Bool>) -> Result<Int32, NetError> {
        let fd = socket(info.ai_family, socketStream, 0)
        guard fd >= 0 else { return .failure(NetError(.connect, url: endpoint, detail: "socket(): \(errorText())")) }
        var keep = false
        defer { if !keep { _ = systemClose(fd) } }
        setCloseOnExec(fd)
        guard setNonBlocking(fd) else {
            return .failure(NetError(.connect, url: endpoint, detail: "fcntl(O_NONBLOCK): \(errorText())"))
        }
        if systemConnect(fd, info.ai_addr, info.ai_addrlen) != 0 {
            guard errno == EINPROGRESS || errno == EINTR else {
                return .failure(NetError(.connect, url: endpoint, detail: errorText()))
            }
            // Wait for writability (connected or failed), in slices so a cancel is noticed.
            while true {
                if cancelled.load(ordering: .relaxed) {
                    return .failure(NetError(.cancelled, url: endpoint, detail: "connect cancelled"))
                }
                let remaining = deadline - .now
                guard remaining > .zero else {
                    return .failure(NetError(.timeout, url: endpoint, detail: "no answer within the connect timeout"))
                }
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let slice = Swift.min(pollSlice, Int32(clamping: remaining.milliseconds + 1))
                let ready = poll(&pfd, 1, slice)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return .failure(NetError(.connect, url: endpoint, detail: "poll(): \(errorText())"))
                }
                if ready > 0 { break }
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else {
                return .failure(NetError(.connect, url: endpoint, detail: "getsockopt(SO_ERROR): \(errorText())"))
            }
            guard error == 0 else { return .failure(NetError(.connect, url: endpoint, detail: errorText(error))) }
        }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        keep = true
        return .success(fd)
    }

    /// A pipe whose read end wakes the I/O thread's `poll`; both ends non-blocking.
    static func makeWakePipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            setCloseOnExec(fd)
            _ = setNonBlocking(fd)
        }
        return (fds[0], fds[1])
    }

    /// Writes one byte to a wake pipe.
    static func signal(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = systemWrite(fd, &byte, 1)
    }

    /// Empties a non-blocking wake pipe.
    static func drain(_ fd: Int32) {
        var sink = [UInt8](repeating: 0, count: 64)
        while systemRead(fd, &sink, sink.count) > 0 {}
    }

    @discardableResult
    static func setNonBlocking(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFL, 0)
        return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0
    }

    static func setCloseOnExec(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFD, 0)
        if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
    }

    /// `send` without SIGPIPE: a peer that went away is an error, not a signal that kills us.
    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Darwin)
        return Darwin.send(fd, bytes.baseAddress, bytes.count, 0)
        #else
        return send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        #endif
    }

    static func errorText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }

    static func systemClose(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
        return Darwin.close(fd)
        #elseif canImport(Musl)
        return Musl.close(fd)
        #else
        return Glibc.close(fd)
        #endif
    }

    static func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer!, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.read(fd, buffer, count)
        #elseif canImport(Musl)
        return Musl.read(fd, buffer, count)
        #else
        return Glibc.read(fd, buffer, count)
        #endif
    }

    private static func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer!, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.write(fd, buffer, count)
        #elseif canImport(Musl)
        return Musl.write(fd, buffer, count)
        #else
        return Glibc.write(fd, buffer, count)
        #endif
    }

    private static func systemConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
        return Darwin.connect(fd, address, length)
        #elseif canImport(Musl)
        return Musl.connect(fd, address, length)
        #else
        return Glibc.connect(fd, address, length)
        #endif
    }

    private static var socketStream: Int32 {
        #if canImport(Glibc)
        return Int32(SOCK_STREAM.rawValue)
        #else
        return SOCK_STREAM
        #endif
    }
}
