#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The non-blocking TCP listener on 127.0.0.1 that adapters connect to. It lives as long as the
/// tunnel, across SSH re-establishment, so its port never changes.
struct LoopbackListener: Sendable {
    static let host = "127.0.0.1"

    let fd: Int32
    let port: Int

    init(port requested: Int) throws(SSHError) {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else {
            throw SSHError(.listenFailed, "could not create the tunnel's listening socket: \(SocketIO.errnoText())")
        }
        SocketIO.setCloseOnExec(fd)
        SocketIO.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(requested).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0, let port = SocketIO.boundPort(fd) else {
            let reason = SocketIO.errnoText()
            SocketIO.closeDescriptor(fd)
            let hint = requested == 0
                ? "" : "; choose another local_port or leave it unset to get a free one"
            throw SSHError(.listenFailed, "could not listen on \(Self.host):\(requested): \(reason)\(hint)")
        }
        SocketIO.setNonBlocking(fd)
        self.fd = fd
        self.port = port
    }

    enum Accepted {
        case connection(Int32)
        case none
        /// Out of file descriptors (or similar): stop accepting for a moment instead of spinning.
        case exhausted(String)
    }

    func accept() -> Accepted {
        while true {
            let client = acceptClient()
            if client >= 0 {
                SocketIO.setNonBlocking(client)
                SocketIO.setCloseOnExec(client)
                SocketIO.setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
                return .connection(client)
            }
            let code = errno
            switch code {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return .none
            default: return .exhausted(SocketIO.errnoText(code))
            }
        }
    }

    private func acceptClient() -> Int32 {
        #if canImport(Glibc)
        return Glibc.accept(fd, nil, nil)
        #else
        return Darwin.accept(fd, nil, nil)
        #endif
    }

    func close() { SocketIO.closeDescriptor(fd) }
}
