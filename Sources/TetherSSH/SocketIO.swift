#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin, non-blocking POSIX socket calls used by the tunnel's single thread.
enum SocketIO {
    enum Transfer: Equatable {
        case bytes(Int)
        case wouldBlock
        case endOfStream
        case failed(Int32)
    }

    static func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    static func closeDescriptor(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    static func makeSocket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 {
        #if canImport(Glibc)
        return Glibc.socket(family, type, proto)
        #else
        return Darwin.socket(family, type, proto)
        #endif
    }

    static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
        #if canImport(Glibc)
        return Glibc.connect(fd, address, length)
        #else
        return Darwin.connect(fd, address, length)
        #endif
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    static func setCloseOnExec(_ fd: Int32) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Transfer {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(code)
        }
    }

    static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Transfer {
        while true {
            #if canImport(Glibc)
            let n = Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            #else
            let n = Darwin.send(fd, buffer.baseAddress, buffer.count, 0)
            #endif
            if n >= 0 { return .bytes(n) }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(code)
        }
    }

    /// Close so the peer sees a reset rather than a clean end of stream: the connection failed,
    /// and a client must not mistake a truncated response for a complete one.
    static func abort(_ fd: Int32) {
        var lingerOption = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &lingerOption, socklen_t(MemoryLayout<linger>.size))
        closeDescriptor(fd)
    }

    /// The local port a bound socket got.
    static func boundPort(_ fd: Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// The remote port of an accepted loopback connection (reported as the channel's originator).
    static func peerPort(_ fd: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        return rc == 0 ? Int(UInt16(bigEndian: address.sin_port)) : 0
    }
}
