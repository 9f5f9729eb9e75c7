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
        }

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
            return batch
        }

        /// Everything queued so far, waiting if nothing is; nil once closed.
        private func nextBatch() async -> [Outbound]? {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> [Outbound]?? in
                    if state.closed { return .some(nil) }
                    if !state.queue.isEmpty { return .some(takeBatch(&state)) }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        // MARK: - Lifecycle

        /// Ends the connection: the reader sees EOF, the writer stops, the peer sees the close.
        func close() {
            let waiter = state.withLock { state -> CheckedContinuation<[Outbound]?, Never>? in
                guard !state.closed else { return nil }
                state.closed = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
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
