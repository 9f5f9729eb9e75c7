import Foundation
import TetherCore
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP proxy between Tether and a simulator that breaks the link on purpose: the
/// server "restarting" (every connection reset, nothing listening for a while, then back),
/// bytes dripped one at a time, a stall longer than the liveness watchdog, connections cut at
/// every byte position of a frame, and frames injected into the stream (malformed ones, a
/// 10 MB one). Faults apply to *stream* connections only — the ones `isStream` picks from what
/// the client sends (e.g. `GET /global/event`) — so REST calls beside the stream pass untouched,
/// except by a restart, which takes everything down as a real one does.
///
/// Blocking sockets, two threads per connection; test code only.
final class FaultProxy: @unchecked Sendable {
    typealias Framing = WireFrameTracker.Framing

    enum Fault: Sendable {
        case none
        /// Server→client bytes of stream connections go out one `send` per byte, `delay` apart.
        case drip(delay: Duration)
        /// The first stream connection to reach `afterFrames` frames stops forwarding there and
        /// stays silent (but open) for `duration`.
        case stall(afterFrames: Int, duration: Duration)
        /// Stream connection n (0-based) delivers `afterFrames` frames, then the first n bytes of
        /// the next one, then is reset; connections after the `cuts`-th are left alone.
        case cutAtEveryByte(afterFrames: Int, cuts: Int)
        /// After every `everyFrames`-th frame of a stream connection, one extra frame carrying
        /// the next of `payloads` (cycled), `limit` in all.
        case inject(everyFrames: Int, payloads: [[UInt8]], limit: Int)
    }

    struct Stats: Sendable, Equatable {
        var connections = 0
        var streamConnections = 0
        /// Server→client bytes forwarded on stream connections.
        var streamBytes = 0
        /// Server→client bytes forwarded on every other connection (REST reads: what a resync costs).
        var restBytes = 0
        var restarts = 0
        var cuts = 0
        var stalls = 0
        var injected = 0
    }

    let port: Int
    private let upstreamPort: Int
    private let framing: Framing
    private let fault: Fault
    private let isStream: @Sendable ([UInt8]) -> Bool

    private let lock = NSLock()
    private var listener: Int32 = -1
    private var live: [ObjectIdentifier: Link] = [:]
    private var statistics = Stats()
    private var stopped = false
    /// `restart(downFor:when:)`'s armed trigger.
    private var restartTrigger: (matches: @Sendable ([UInt8]) -> Bool, downFor: Duration)?

    init(upstreamPort: Int, framing: Framing, fault: Fault = .none,
         isStream: @escaping @Sendable ([UInt8]) -> Bool = { _ in true }) throws {
        self.upstreamPort = upstreamPort
        self.framing = framing
        self.fault = fault
        self.isStream = isStream
        let fd = try Self.listen(port: 0)
        listener = fd
        port = Self.localPort(fd)
        startAccepting(fd)
    }

    var stats: Stats { lock.withLock { statistics } }

    /// The server "restarts": every connection is reset, the port refuses connections for
    /// `downFor`, then accepts again (same port, same server state behind it).
    func restart(downFor: Duration) async throws {
        takeDown { $0.restarts += 1 }
        try await listenAgain(after: downFor)
    }

    /// Arms a restart for the moment a client sends bytes that `matches` picks (e.g. one
    /// request line): those bytes never reach the server, every connection is reset and the port
    /// refuses connections for `downFor`, as a server dying just as that request came. Once.
    func restart(downFor: Duration, when matches: @escaping @Sendable ([UInt8]) -> Bool) {
        lock.withLock { restartTrigger = (matches, downFor) }
    }

    /// The port accepts connections again after `delay`.
    private func listenAgain(after delay: Duration) async throws {
        try await Task.sleep(for: delay)
        var attempt = 0
        while true {
            do {
                let fd = try Self.listen(port: port)
                let keep = lock.withLock { () -> Bool in
                    guard !stopped else { return false }
                    listener = fd
                    return true
                }
                guard keep else { close(fd); return }
                startAccepting(fd)
                return
            } catch {
                attempt += 1
                if attempt > 100 { throw error }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    func stop() {
        takeDown { _ in stopped = true }
    }

    /// Closes the listener and resets every connection; `update` runs under the lock first.
    private func takeDown(_ update: (inout Stats) -> Void) {
        let (fd, links) = lock.withLock { () -> (Int32, [Link]) in
            update(&statistics)
            let fd = listener
            listener = -1
            return (fd, Array(live.values))
        }
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        for link in links { link.reset() }
    }

    deinit { stop() }

    // MARK: - Accepting

    private func startAccepting(_ fd: Int32) {
        Thread { [weak self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                guard let self else { close(client); return }
                self.serve(client)
            }
        }.start()
    }

    private func serve(_ client: Int32) {
        var one: Int32 = 1
        setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        guard let upstream = try? TestSockets.connect(port: upstreamPort, timeoutSeconds: 0) else {
            Link.resetAndClose(client)
            return
        }
        setsockopt(upstream, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let link = Link(client: client, upstream: upstream)
        let registered = lock.withLock { () -> Bool in
            guard !stopped, listener >= 0 else { return false }
            live[ObjectIdentifier(link)] = link
            statistics.connections += 1
            if framing == .lines { link.markStream(index: statistics.streamConnections); statistics.streamConnections += 1 }
            return true
        }
        guard registered else {
            link.reset()
            link.finishedOneDirection()
            link.finishedOneDirection()
            return
        }
        Thread { [self] in
            clientToServer(link)
            finish(link)
        }.start()
        Thread { [self] in
            serverToClient(link)
            finish(link)
        }.start()
    }

    private func finish(_ link: Link) {
        if link.finishedOneDirection() {
            _ = lock.withLock { live.removeValue(forKey: ObjectIdentifier(link)) }
        }
    }

    // MARK: - Pumps

    private func clientToServer(_ link: Link) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(link.client, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                shutdown(link.upstream, Int32(SHUT_WR))
                return
            }
            let chunk = Array(buffer[0..<count])
            let trigger = lock.withLock { () -> Duration? in
                guard let armed = restartTrigger, armed.matches(chunk) else { return nil }
                restartTrigger = nil
                return armed.downFor
            }
            if let downFor = trigger {
                takeDown { $0.restarts += 1 }
                Task { try? await self.listenAgain(after: downFor) }
                return
            }
            if link.streamIndex == nil, isStream(chunk) {
                lock.withLock {
                    link.markStream(index: statistics.streamConnections)
                    statistics.streamConnections += 1
                }
            }
            guard Link.sendAll(link.upstream, chunk[...]) else {
                link.reset()
                return
            }
        }
    }

    private func serverToClient(_ link: Link) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var tracker = WireFrameTracker(framing: framing)
        var bytesIntoCutFrame = 0
        var pendingInjection = false
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(link.upstream, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                shutdown(link.client, Int32(SHUT_WR))
                return
            }
            guard let index = link.streamIndex else {
                lock.withLock { statistics.restBytes += count }
                guard Link.sendAll(link.client, buffer[0..<count]) else { link.reset(); return }
                continue
            }
            lock.withLock { statistics.streamBytes += count }
            if case .none = fault {
                guard Link.sendAll(link.client, buffer[0..<count]) else { link.reset(); return }
                continue
            }
            var flushed = 0
            for position in 0..<count {
                let mark = tracker.feed(buffer[position])
                switch fault {
                case .none:
                    break
                case .drip(let delay):
                    guard Link.sendAll(link.client, buffer[position...position]) else { link.reset(); return }
                    flushed = position + 1
                    if delay > .zero { Thread.sleep(forTimeInterval: delay.inSeconds) }
                case .stall(let afterFrames, let duration):
                    guard mark == .frameEnd, tracker.frames == afterFrames else { break }
                    let first = lock.withLock { () -> Bool in
                        guard statistics.stalls == 0 else { return false }
                        statistics.stalls = 1
                        return true
                    }
                    if first {
                        guard Link.sendAll(link.client, buffer[flushed...position]) else { link.reset(); return }
                        flushed = position + 1
                        Thread.sleep(forTimeInterval: duration.inSeconds)
                    }
                case .cutAtEveryByte(let afterFrames, let cuts):
                    guard index < cuts, tracker.frames >= afterFrames else { break }
                    if mark == .frameEnd, tracker.frames == afterFrames {
                        bytesIntoCutFrame = 0
                        if index == 0 { return cut(link, buffer[flushed...position]) }
                        continue
                    }
                    bytesIntoCutFrame += 1
                    if bytesIntoCutFrame == index || mark == .frameEnd {
                        return cut(link, buffer[flushed...position])
                    }
                case .inject(let everyFrames, let payloads, let limit):
                    if mark == .frameEnd, tracker.frames % everyFrames == 0 { pendingInjection = true }
                    if pendingInjection, tracker.atInjectionPoint {
                        pendingInjection = false
                        let done = lock.withLock { () -> Int? in
                            guard statistics.injected < limit else { return nil }
                            statistics.injected += 1
                            return statistics.injected - 1
                        }
                        guard let done else { break }
                        guard Link.sendAll(link.client, buffer[flushed...position]) else { link.reset(); return }
                        flushed = position + 1
                        let frame = tracker.wrap(framing.frame(payloads[done % payloads.count]))
                        guard Link.sendAll(link.client, frame[...]) else { link.reset(); return }
                    }
                }
            }
            if flushed < count {
                guard Link.sendAll(link.client, buffer[flushed..<count]) else { link.reset(); return }
            }
        }
    }

    /// Sends what precedes the cut, then resets both sides.
    private func cut(_ link: Link, _ last: ArraySlice<UInt8>) {
        _ = Link.sendAll(link.client, last)
        lock.withLock { statistics.cuts += 1 }
        link.reset()
    }

    // MARK: - Sockets

    private static func listen(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSockets.Failure(description: "socket failed") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = TestSockets.loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw TestSockets.Failure(description: "proxy bind 127.0.0.1:\(port): \(reason)")
        }
        return fd
    }

    private static func localPort(_ fd: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// One proxied connection: the client's socket and ours to the server.
private final class Link: @unchecked Sendable {
    let client: Int32
    let upstream: Int32
    private let lock = NSLock()
    private var index: Int?
    private var open = 2
    private var wasReset = false

    init(client: Int32, upstream: Int32) {
        self.client = client
        self.upstream = upstream
    }

    var streamIndex: Int? { lock.withLock { index } }
    func markStream(index: Int) { lock.withLock { self.index = index } }

    /// Aborts both sides (RST to the client, as a killed server's kernel sends) and wakes both pumps.
    func reset() {
        let first = lock.withLock { () -> Bool in
            defer { wasReset = true }
            return !wasReset
        }
        guard first else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        setsockopt(upstream, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(upstream, Int32(SHUT_RDWR))
    }

    /// One pump is done; the second one closes the sockets. Returns true for the second.
    func finishedOneDirection() -> Bool {
        let last = lock.withLock { () -> Bool in
            open -= 1
            return open == 0
        }
        if last {
            close(client)
            close(upstream)
        }
        return last
    }

    static func resetAndClose(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }

    static func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}
