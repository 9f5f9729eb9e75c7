import FlyingSocks
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CodexMonitorSimulator {
    /// One client connection: reads lines with no length cap, keeps the auth state, and owns the
    /// outbound queue that a single writer drains, so each line goes out whole and in the order
    /// it was queued (responses and broadcast events interleave exactly as enqueued).
    final class Connection: Sendable {
        private struct Outbound: Sendable {
            var line: [UInt8]
            var isEvent: Bool
        }

        private struct State: Sendable {
            var authenticated: Bool
            var closed = false
            var queue: [Outbound] = []
            var queuedEvents = 0
            var waiter: CheckedContinuation<[Outbound]?, Never>?
            var linesWritten = 0
            var deltaItemsSeen: Set<String> = []
            /// Bytes queued and not yet taken by the writer.
            var queuedBytes = 0
            /// The flood writer, waiting for the queue to drain.
            var floodWaiter: CheckedContinuation<Bool, Never>?
            var floodStarted = false
            /// Close once the queue is empty (after a flood).
            var closeWhenDrained = false
        }

        /// Queued bytes above which the flood writer waits for the socket.
        static let floodHighWater = 256 * 1024

        let index: Int
        private let socket: AsyncSocket
        private let options: Options
        private let broadcast: Broadcast
        private let logger: Logger
        private let state: Locked<State>

        init(index: Int, socket: AsyncSocket, options: Options, broadcast: Broadcast, logger: Logger) {
            self.index = index
            self.socket = socket
            self.options = options
            self.broadcast = broadcast
            self.logger = logger
            state = Locked(State(authenticated: options.token == nil))
        }

        var isAuthenticated: Bool {
            state.withLock { $0.authenticated }
        }

        // MARK: - Queueing

        func send(_ message: JSON) {
            enqueue(Array((message.serialized + "\n").utf8), isEvent: false)
        }

        /// Sends the `auth` success and starts event forwarding in one step, so no event can
        /// slip in ahead of the response.
        func completeAuth(response: JSON?) {
            let line = response.map { Array(($0.serialized + "\n").utf8) }
            let waiter = state.withLock { state -> (CheckedContinuation<[Outbound]?, Never>, [Outbound])? in
                state.authenticated = true
                guard let line, !state.closed else { return nil }
                state.queue.append(Outbound(line: line, isEvent: false))
                return takeWaiter(&state)
            }
            if let (continuation, batch) = waiter { continuation.resume(returning: batch) }
        }

        /// A broadcast event: dropped before auth, skipped when lagging or over capacity.
        func enqueueEvent(_ line: [UInt8], tag: Broadcast.EventTag) {
            let lagEvents = options.lagEvents
            let capacity = max(1, options.broadcastCapacity)
            let waiter = state.withLock { state -> (CheckedContinuation<[Outbound]?, Never>, [Outbound])? in
                guard state.authenticated, !state.closed else { return nil }
                if lagEvents, case .delta(let itemID) = tag, !state.deltaItemsSeen.insert(itemID).inserted {
                    return nil
                }
                state.queue.append(Outbound(line: line, isEvent: true))
                state.queuedEvents += 1
                if state.queuedEvents > capacity, let oldest = state.queue.firstIndex(where: \.isEvent) {
                    // tokio's `Lagged`: the receiver silently skips to the oldest retained event.
                    state.queue.remove(at: oldest)
                    state.queuedEvents -= 1
                }
                return takeWaiter(&state)
            }
            if let (continuation, batch) = waiter { continuation.resume(returning: batch) }
        }

        private func enqueue(_ line: [UInt8], isEvent: Bool) {
            let waiter = state.withLock { state -> (CheckedContinuation<[Outbound]?, Never>, [Outbound])? in
                guard !state.closed else { return nil }
                state.queue.append(Outbound(line: line, isEvent: isEvent))
                state.queuedBytes += line.count
                return takeWaiter(&state)
            }
            if let (continuation, batch) = waiter { continuation.resume(returning: batch) }
        }

        private func takeWaiter(_ state: inout State) -> (CheckedContinuation<[Outbound]?, Never>, [Outbound])? {
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, takeBatch(&state))
        }

        private func takeBatch(_ state: inout State) -> [Outbound] {
            let batch = state.queue
            state.queue.removeAll(keepingCapacity: true)
            state.queuedEvents = 0
            state.queuedBytes = 0
            return batch
        }

        /// Everything queued so far, waiting if nothing is; nil once closed (or drained, when
        /// the connection is to close then).
        private func nextBatch() async -> [Outbound]? {
            await withCheckedContinuation { continuation in
                let (ready, flood) = state.withLock { state -> ([Outbound]??, CheckedContinuation<Bool, Never>?) in
                    if state.closed { return (.some(nil), nil) }
                    if !state.queue.isEmpty {
                        let batch = takeBatch(&state)
                        defer { state.floodWaiter = nil }
                        return (.some(batch), state.floodWaiter)
                    }
                    if state.closeWhenDrained { return (.some(nil), nil) }
                    state.waiter = continuation
                    return (.none, nil)
                }
                flood?.resume(returning: true)
                if let ready { continuation.resume(returning: ready) }
            }
        }

        // MARK: - Flood (benchmarks)

        /// Starts `chunks` (whole lines each) on this connection once, as fast as the socket takes
        /// them; then closes the connection when `close`. Responses queued meanwhile go out between
        /// chunks.
        func startFlood(_ chunks: [[UInt8]], close: Bool) {
            guard state.withLock({ state in
                defer { state.floodStarted = true }
                return !state.floodStarted
            }) else { return }
            Task {
                for chunk in chunks {
                    guard await self.enqueueFlood(chunk) else { return }
                }
                guard close else { return }
                let waiter = self.state.withLock { state -> CheckedContinuation<[Outbound]?, Never>? in
                    state.closeWhenDrained = true
                    guard state.queue.isEmpty, let waiter = state.waiter else { return nil }
                    state.waiter = nil
                    return waiter
                }
                waiter?.resume(returning: nil)
            }
        }

        /// Queues one flood chunk, first waiting while more than `floodHighWater` bytes are queued;
        /// false once closed.
        private func enqueueFlood(_ chunk: [UInt8]) async -> Bool {
            enum Step { case closed, queued((CheckedContinuation<[Outbound]?, Never>, [Outbound])?), full }
            while true {
                let step = state.withLock { state -> Step in
                    if state.closed { return .closed }
                    guard state.queuedBytes <= Self.floodHighWater else { return .full }
                    state.queue.append(Outbound(line: chunk, isEvent: false))
                    state.queuedBytes += chunk.count
                    return .queued(takeWaiter(&state))
                }
                switch step {
                case .closed:
                    return false
                case .queued(let writer):
                    if let (waiter, batch) = writer { waiter.resume(returning: batch) }
                    return true
                case .full:
                    let open = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                        let now = state.withLock { state -> Bool? in
                            if state.closed { return false }
                            if state.queuedBytes <= Self.floodHighWater { return true }
                            state.floodWaiter = continuation
                            return nil
                        }
                        if let now { continuation.resume(returning: now) }
                    }
                    if !open { return false }
                }
            }
        }

        // MARK: - Lifecycle

        /// Ends the connection: the reader sees EOF, the writer stops, the peer sees the close.
        func close() {
            let (waiter, flood) = state.withLock { state -> (CheckedContinuation<[Outbound]?, Never>?, CheckedContinuation<Bool, Never>?) in
                guard !state.closed else { return (nil, nil) }
                state.closed = true
                defer { state.waiter = nil; state.floodWaiter = nil }
                return (state.waiter, state.floodWaiter)
            }
            waiter?.resume(returning: nil)
            flood?.resume(returning: false)
            _ = shutdown(socket.socket.file.rawValue, Int32(SHUT_RDWR))
        }

        /// Serves the connection until EOF, a read error, a drop or `close()`; closes the socket.
        func run(handle: @escaping @Sendable ([Wire.Request]) async -> Void) async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.writeLoop() }
                await readLoop(handle: handle)
                close()
                await group.waitForAll()
            }
            try? socket.close()
        }

        private func writeLoop() async {
            // Ends when closed, or drained after a flood that closes: then the peer sees EOF.
            defer { close() }
            while let batch = await nextBatch() {
                var lines = batch[...]
                while !lines.isEmpty {
                    // Write up to the drop point in one go, then count it.
                    var take = lines.count
                    let written = state.withLock { $0.linesWritten }
                    if let limit = options.dropConnectionAfter, written < limit {
                        take = min(take, limit - written)
                    }
                    let chunk = lines.prefix(take)
                    lines = lines.dropFirst(take)
                    var bytes: [UInt8] = []
                    for outbound in chunk { bytes += outbound.line }
                    do {
                        try await socket.write(Data(bytes))
                    } catch {
                        close()
                        return
                    }
                    let total = state.withLock { state in
                        state.linesWritten += take
                        return state.linesWritten
                    }
                    if let limit = options.dropConnectionAfter, total == limit, broadcast.claimDrop() {
                        logger.debug("codexmonitor sim dropping connection", metadata: ["connection": "\(index)", "lines": "\(total)"])
                        close()
                        return
                    }
                }
            }
        }

        private func readLoop(handle: @Sendable ([Wire.Request]) async -> Void) async {
            var buffer: [UInt8] = []
            var scanned = 0
            while true {
                let chunk: [UInt8]
                do {
                    chunk = try await socket.read(atMost: 65_536)
                } catch {
                    return
                }
                if state.withLock({ $0.closed }) { return }
                buffer += chunk
                var requests: [Wire.Request] = []
                var start = 0
                // tokio `lines()`: no maximum line length; each line is trimmed, empty ones skipped.
                while let newline = buffer[max(scanned, start)...].firstIndex(of: 0x0A) {
                    let line = Self.trimmed(buffer[start..<newline])
                    start = newline + 1
                    scanned = start
                    guard !line.isEmpty else { continue }
                    if let request = Wire.request(fromLine: Array(line)) {
                        requests.append(request)
                    } else {
                        logger.debug("codexmonitor sim ignoring unparseable line", metadata: ["connection": "\(index)"])
                    }
                }
                if start > 0 {
                    buffer.removeFirst(start)
                }
                scanned = buffer.count
                if !requests.isEmpty {
                    await handle(requests)
                }
            }
        }

        private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A || $0 == 0x0B || $0 == 0x0C }
            guard let first = bytes.firstIndex(where: { !isSpace($0) }),
                  let last = bytes.lastIndex(where: { !isSpace($0) })
            else { return [] }
            return bytes[first...last]
        }
    }
}
