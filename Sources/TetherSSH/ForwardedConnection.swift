#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One accepted loopback connection and its channel (direct-tcpip, or exec), as the loop thread sees it.
final class ForwardedConnection {
    enum Phase {
        /// Accepted; waiting for its turn to open a channel (libssh2 opens one at a time).
        case awaitingChannel
        /// A session channel is open; its command is being started (exec targets only).
        case startingCommand
        /// Channel open; bytes flow both ways.
        case forwarding
        /// The local socket is done with; closing and freeing the channel.
        case closingChannel
        /// Nothing left; about to be dropped.
        case finished
    }

    let id: Int
    private(set) var fd: Int32
    let peerPort: Int
    var channel: OpaquePointer?
    var phase = Phase.awaitingChannel

    /// Read from the local socket, not yet written to the channel.
    var toRemote = ByteQueue()
    /// Read from the channel, not yet written to the local socket.
    var toLocal = ByteQueue()
    /// The local client finished sending (recv returned 0).
    var localEOF = false
    /// We sent the channel's EOF after forwarding everything the client sent.
    var channelEOFSent = false
    /// The channel's EOF arrived (the target finished sending).
    var remoteEOF = false
    /// We shut down the local socket's write side after delivering everything.
    var localWriteShut = false

    var bytesUp = 0
    var bytesDown = 0

    init(id: Int, fd: Int32) {
        self.id = id
        self.fd = fd
        self.peerPort = SocketIO.peerPort(fd)
    }

    /// Both directions have ended cleanly.
    var isComplete: Bool { channelEOFSent && localWriteShut }

    /// Closes the local socket normally (after both directions finished).
    func closeLocal() {
        guard fd >= 0 else { return }
        SocketIO.closeDescriptor(fd)
        fd = -1
    }

    /// Closes the local socket with a reset: the forwarding failed part-way.
    func abortLocal() {
        guard fd >= 0 else { return }
        SocketIO.abort(fd)
        fd = -1
        toRemote.removeAll()
        toLocal.removeAll()
    }

    func shutdownLocalWrite() {
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_WR)) }
        localWriteShut = true
    }
}

/// A FIFO of bytes with a moving head, so partial writes do not shift the storage every time.
struct ByteQueue {
    private var storage: [UInt8] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if head > 0 && head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        }
        storage.append(contentsOf: bytes)
    }

    func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[head...])) }
    }

    mutating func consume(_ count: Int) {
        head += count
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        }
    }

    mutating func removeAll() {
        storage = []
        head = 0
    }
}
