#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A tiny blocking TCP server on 127.0.0.1 for the line client's tests: one thread accepts,
/// one thread per connection runs `handler`.
final class LocalTCPServer: Sendable {
    let port: Int
    private let listener: Int32

    /// - Parameter accepting: false leaves connections in the kernel's queue (for connect timeouts).
    init(backlog: Int32 = 16, accepting: Bool = true, handler: @escaping @Sendable (TestSocket) -> Void = { _ in }) throws {
        let fd = socket(AF_INET, Self.stream, 0)
        guard fd >= 0 else { throw ServerError(what: "socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else { throw ServerError(what: "bind/listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        guard accepting else { return }
        let thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                let worker = Thread { handler(TestSocket(fd: client)) }
                worker.start()
            }
        }
        thread.start()
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// A port nobody listens on (bound, then released).
    static func closedPort() throws -> Int {
        let server = try LocalTCPServer(accepting: false)
        server.stop()
        return server.port
    }

    static var stream: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }

    struct ServerError: Error { let what: String }
}

/// The server's side of one connection, blocking.
final class TestSocket: Sendable {
    let fd: Int32
    private let buffer = Mutex<[UInt8]>([])

    init(fd: Int32) { self.fd = fd }

    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { raw in
                #if canImport(Glibc)
                send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
                #else
                send(fd, raw.baseAddress, raw.count, 0)
                #endif
            }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// The next line without its LF; nil at EOF.
    func readLine() -> String? {
        while true {
            let found: String? = buffer.withLock { buffer in
                guard let lf = buffer.firstIndex(of: 10) else { return nil }
                let line = String(decoding: buffer[..<lf], as: UTF8.self)
                buffer.removeSubrange(...lf)
                return line
            }
            if let found { return found }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { return nil }
            buffer.withLock { $0.append(contentsOf: chunk[..<count]) }
        }
    }

    func close() {
        #if canImport(Glibc)
        Glibc.close(fd)
        #else
        Darwin.close(fd)
        #endif
    }
}
