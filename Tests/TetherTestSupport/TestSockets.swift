import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Blocking loopback sockets for the test side of the tunnel (run them off the Swift
/// concurrency pool with `offPool`).
enum TestSockets {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        return address
    }

    /// A loopback port free a moment ago, for something the test starts there itself.
    static func freePort() throws -> Int {
        let (fd, port) = try boundLoopbackSocket()
        close(fd)
        return port
    }

    /// A loopback port where every connection is refused for as long as the test holds it (a
    /// socket bound and never listening): a port that was merely free can be taken by another
    /// test running in parallel. Close `holder` when done.
    static func refusingPort() throws -> (port: Int, holder: Int32) {
        let (fd, port) = try boundLoopbackSocket()
        return (port, fd)
    }

    private static func boundLoopbackSocket() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: 0)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw Failure(description: "bind failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A connected blocking socket with generous send/receive timeouts, so a broken tunnel fails
    /// the test instead of hanging it.
    static func connect(port: Int, timeoutSeconds: Int = 30) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): \(reason)")
        }
        return fd
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    enum ReadEnd: Equatable {
        case endOfStream
        case reset
        case timedOut
    }

    /// Reads until the peer ends the stream (or resets it, or the timeout hits).
    static func readAll(_ fd: Int32) -> (bytes: [UInt8], end: ReadEnd) {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                result += buffer[0..<n]
                continue
            }
            if n == 0 { return (result, .endOfStream) }
            if errno == EINTR { continue }
            return (result, errno == EAGAIN || errno == EWOULDBLOCK ? .timedOut : .reset)
        }
    }

    /// Reads exactly `count` bytes (or fails).
    static func read(_ fd: Int32, count: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while result.count < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - result.count), 0) }
            guard n > 0 else { throw Failure(description: "read \(result.count)/\(count) bytes, then \(n == 0 ? "EOF" : String(cString: strerror(errno)))") }
            result += buffer[0..<n]
        }
        return result
    }

    /// Connects, sends `payload` while reading concurrently (so big payloads cannot deadlock on
    /// full buffers), half-closes, and returns everything received until end of stream.
    static func roundTrip(port: Int, payload: [UInt8]) throws -> [UInt8] {
        let fd = try connect(port: port)
        defer { close(fd) }
        let sendError = ErrorBox()
        let writer = Thread {
            do { try sendAll(fd, payload) } catch { sendError.set(error) }
            shutdown(fd, Int32(SHUT_WR))
        }
        writer.start()
        let (bytes, end) = readAll(fd)
        if let error = sendError.get() { throw error }
        guard end == .endOfStream else { throw Failure(description: "stream ended with \(end) after \(bytes.count) bytes") }
        return bytes
    }

    /// True when something on `port` sends an SSH banner.
    static func answersSSH(port: Int) -> Bool {
        guard let fd = try? connect(port: port, timeoutSeconds: 2) else { return false }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n >= 7 && String(decoding: buffer[0..<7], as: UTF8.self) == "SSH-2.0"
    }

    static func openDescriptorCount() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
    }

    /// Entries of /proc/self/fd that are TCP sockets with `ports` at either end (matched by inode
    /// through /proc/net/tcp), so descriptors opened meanwhile by unrelated tests do not count.
    static func openDescriptorCount(onPorts ports: Set<Int>) -> Int {
        var inodes = Set<String>()
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9 else { continue }
            let endpoints = [fields[1], fields[2]].compactMap { $0.split(separator: ":").last.flatMap { Int($0, radix: 16) } }
            if endpoints.contains(where: ports.contains) { inodes.insert(String(fields[9])) }
        }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return false }
            return inodes.contains(String(target.dropFirst(8).dropLast()))
        }.count
    }
}

final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var error: (any Error)?
    func set(_ error: any Error) { lock.withLock { self.error = error } }
    func get() -> (any Error)? { lock.withLock { error } }
}

/// Runs blocking socket work on its own thread, keeping the concurrency pool free.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// A TCP server on 127.0.0.1 that echoes what it receives. `.afterEndOfStream` holds everything
/// until the client half-closes, then sends it back and closes: it proves EOF travelled through.
/// `.hangUp(after:)` reads that many bytes, answers nothing and closes (resetting what the client
/// sends after).
final class EchoServer: @unchecked Sendable {
    enum Mode: Sendable { case streaming, afterEndOfStream, hangUp(after: Int) }

    let port: Int
    private let fd: Int32

    init(mode: Mode = .streaming) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = TestSockets.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 512) == 0 else { throw TestSockets.Failure(description: "echo server bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let listener = fd
        Thread {
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                Thread { Self.serve(client, mode: mode) }.start()
            }
        }.start()
    }

    private static func serve(_ client: Int32, mode: Mode) {
        defer { close(client) }
        var held: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var received = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += n
            switch mode {
            case .streaming:
                guard (try? TestSockets.sendAll(client, Array(buffer[0..<n]))) != nil else { return }
            case .afterEndOfStream:
                held += buffer[0..<n]
            case .hangUp(let limit):
                if received >= limit { return }
            }
        }
        if !held.isEmpty { try? TestSockets.sendAll(client, held) }
        shutdown(client, Int32(SHUT_WR))
    }

    private let lock = NSLock()
    private var stopped = false

    /// Wakes the accept thread (shutdown on a listening socket does) and closes the socket.
    func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    deinit { stop() }
}
