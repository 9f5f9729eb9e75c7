import Logging
import Synchronization
import TetherCore
import TetherNet
import TetherStreaming

/// JSON-RPC with the CodexMonitor daemon over one line connection.
///
/// Many calls may be in flight; the daemon answers them in any order (each request is its own
/// task upstream), so responses are matched by id, and each call has its own timeout.
/// Notifications arrive interleaved with responses. The reader decodes them in its own task,
/// so that parsing and the consumer's work use two cores (item deltas and `item/started` read
/// straight from their bytes when the consumer keeps no `raw`: `CodexMonitorHotLine`), and
/// hands them on a read's worth at a time, in order — what came before a response is handed
/// on before its call is answered — through the kernel's bounded channel (``notifications``),
/// weighed in wire bytes. When it is full the reader waits (TCP then pushes back on the daemon)
/// — unless a call is waiting for its response: that response must still be read, so then the
/// channel overfills up to `callBudget`, with what is read meanwhile kept as the lines' bytes
/// (a decoded notification takes several times its line; the consumer takes such a backlog a
/// bound's worth at a time), and what does not fit is dropped, counted (the consumer re-reads;
/// the daemon itself drops events for slow clients the same way, silently). Unparsable lines
/// and responses to unknown ids are logged and skipped.
final class CodexMonitorRPC: Sendable {
    /// Why a call failed.
    enum Failure: Error, Sendable {
        /// The daemon answered `{"error":{"message"}}`.
        case remote(RemoteError)
        /// No response within the call's timeout.
        case timedOut(method: String, after: Duration)
        /// The connection ended: with this error, or `nil` when closed cleanly (by either side).
        case closed(NetError?)
    }

    /// A notification, as the consumer receives it.
    enum Incoming: Sendable, Equatable {
        /// A daemon notification; `raw` is the whole line, for `--raw`.
        case notification(method: String, params: JSONValue, raw: JSONValue)
        /// An `app-server-event` carrying an item delta or an `item/started`, read without
        /// parsing the line whole (only when the consumer keeps no `raw`: `setKeepingRaw`).
        case hot(CodexMonitorHotLine)
        /// Notifications kept as their lines, read while a call waited: the consumer decodes
        /// each (`decode(_:strings:)`).
        case lines(KeptLines)
    }

    /// The notifications, in order, for their one consumer: `next(timeout:)` tells it how many
    /// were dropped after a batch. Ends when the connection does (a broken one with its
    /// `Failure`).
    let notifications: BatchChannel<Incoming>

    private struct State {
        var nextID: Int64 = 1
        var pending: [Int64: ResponseSlot] = [:]
        var end: Failure?
        var keepingRaw = true
    }

    private let connection: any LineConnection
    private let logger: Logger
    private let callBudget: Int
    private let state = Mutex(State())

    /// How many wire bytes of notifications wait for the consumer before the reader waits, and
    /// the most a consumer takes at once: the size chosen is measured in bench/PROFILE.md.
    static let channelBytes = 256 << 10

    /// The most wire bytes of notifications the reader hands on at once.
    static let handedAtOnce = 32 << 10

    /// - Parameters:
    ///   - budget: wire bytes of notifications waiting for the consumer before the reader waits.
    ///   - callBudget: while a call waits for its response the reader cannot wait (the response
    ///     comes on the same connection): it queues up to this many bytes, then drops and
    ///     counts what comes.
    init(connection: any LineConnection, logger: Logger, budget: Int = channelBytes, callBudget: Int = 16 << 20) {
        self.connection = connection
        self.logger = logger
        self.callBudget = max(callBudget, budget)
        notifications = BatchChannel(capacity: budget)
    }

    /// Starts reading. Call once.
    func start() {
        Task { [self] in await readLoop() }
    }

    /// Closes the connection; pending calls fail with `.closed(nil)`, and the consumer is gone.
    func close() {
        notifications.cancel()  // a reader waiting for room reads on, to the end
        connection.close()
    }

    /// Whether notifications keep `raw` from now on (the default: they do).
    func setKeepingRaw(_ keepingRaw: Bool) {
        state.withLock { $0.keepingRaw = keepingRaw }
    }

    /// A call is waiting for its response: the reader must not wait for the consumer.
    private var hasCallsWaiting: Bool { state.withLock { !$0.pending.isEmpty } }

    // MARK: Calls

    /// Sends `method` with `params` and returns the daemon's `result` as sent (unwrapping the
    /// app-server's raw results is the caller's business: see `CodexMonitorResult`).
    func call(_ method: String, params: JSONValue? = nil, timeout: Duration) async throws(Failure) -> JSONValue {
        let slot = ResponseSlot()
        let registered: Result<Int64, Failure> = state.withLock { state in
            if let end = state.end { return .failure(end) }
            let id = state.nextID
            state.nextID += 1
            state.pending[id] = slot
            return .success(id)
        }
        let id = try registered.get()
        notifications.rouseProducers()  // a reader waiting for room must read on: the response comes behind
        var request: JSONObject = ["id": .int(id), "method": .string(method)]
        if let params { request["params"] = params }
        var writer = JSONWriter(reservingCapacity: 128)
        writer.write(.object(request))
        // Never log params: `auth` carries the token.
        logger.trace("CodexMonitor request", metadata: ["id": "\(id)", "method": "\(method)"])

        let timer = Task { [self] in
            try await Task.sleep(for: timeout)
            complete(id, .failure(.timedOut(method: method, after: timeout)))
        }
        defer { timer.cancel() }
        do {
            try await connection.send(writer.bytes)
        } catch {
            complete(id, .failure(.closed(error as? NetError)))
        }
        return try await withTaskCancellationHandler {
            await slot.value()
        } onCancel: {
            complete(id, .failure(.closed(NetError(.cancelled, url: "", detail: "the call was cancelled"))))
        }.get()
    }

    private func complete(_ id: Int64, _ result: Result<JSONValue, Failure>) {
        let slot = state.withLock { $0.pending.removeValue(forKey: id) }
        slot?.fulfil(result)
    }

    // MARK: Notifications

    /// A notification kept as its line (`Incoming.lines`), decoded as the reader would have;
    /// nil (logged) when it is not JSON or not a notification after all. `strings`: the
    /// consumer's table of recent ids, shared across its lines.
    func decode(_ line: [UInt8], strings: JSONStringTable?) -> Incoming? {
        let keepingRaw = state.withLock { $0.keepingRaw }
        switch read(line, strings: strings, keepingRaw: keepingRaw) {
        case .hot(let hot): return .hot(hot)
        case .value(let value):
            guard case .notification(let method, let params) = Message.classify(value) else {
                logger.warning("skipping a CodexMonitor line that is not a notification",
                               metadata: ["line": "\(String(decoding: line.prefix(200), as: UTF8.self))"])
                return nil
            }
            return .notification(method: method, params: params, raw: value)
        case nil: return nil
        }
    }

    /// The line parsed; nil (logged, skipped) when it is not JSON.
    private func parsed(_ line: [UInt8], strings: JSONStringTable?) -> JSONValue? {
        do {
            return try JSONParser.parse(line, strings: strings)
        } catch {
            logger.warning("skipping a line from CodexMonitor that is not JSON",
                           metadata: ["error": "\(error)", "line": "\(String(decoding: line.prefix(200), as: UTF8.self))"])
            return nil
        }
    }

    /// A line read: a hot line straight from its bytes when the consumer keeps no `raw`, else
    /// the parse.
    private enum Read {
        case hot(CodexMonitorHotLine)
        case value(JSONValue)
    }

    private func read(_ line: [UInt8], strings: JSONStringTable?, keepingRaw: Bool) -> Read? {
        if !keepingRaw, let hot = CodexMonitorHotLine.read(line, strings: strings) { return .hot(hot) }
        return parsed(line, strings: strings).map(Read.value)
    }

    // MARK: Reading

    /// What one line is to the reader.
    private enum Routed {
        case notification(Incoming)
        /// A notification to keep as its line.
        case kept([UInt8])
        /// A response to the call `id`, which still waits: it is answered once what came
        /// before the response was handed on (and until then the reader may not wait).
        case response(id: Int64, Result<JSONValue, Failure>)
        case skipped
    }

    private func readLoop() async {
        var end = Failure.closed(nil)
        // The reader's own table (a table is one task's).
        let strings = JSONStringTable(vocabulary: CodexMonitorHotLine.busyWords)
        do {
            while let lines = try await connection.receiveBatch() {
                strings.startBatch()
                let keepingRaw = state.withLock { $0.keepingRaw }
                var decoding = decodes()
                var batch = Handing()
                for line in lines {
                    switch route(line, strings: strings, keepingRaw: keepingRaw, decoding: decoding) {
                    case .notification(let incoming):
                        batch.add(incoming, bytes: line.count)
                    case .kept(let line):
                        batch.keep(line)
                    case .response(let id, let result):
                        // What came before it is handed on first, as it came first.
                        await hand(&batch)
                        complete(id, result)
                        decoding = decodes()
                    case .skipped:
                        break
                    }
                    // A large read goes on in parts: the consumer starts on the first sooner,
                    // and less waits decoded.
                    if batch.bytes >= Self.handedAtOnce {
                        await hand(&batch)
                        decoding = decodes()
                    }
                }
                await hand(&batch)
            }
        } catch let error as NetError {
            end = .closed(error)
        } catch {
            end = .closed(NetError(.other, url: "", detail: "\(error)"))
        }
        finish(end)
    }

    /// Whether the reader decodes the notifications it reads now: not while a call waits (what
    /// it reads then may be a backlog past the channel's bound: it waits as its lines, which
    /// take less memory than decoded notifications).
    private func decodes() -> Bool { !hasCallsWaiting }

    /// Reads one line: a notification is decoded (`decoding`), or kept as its line; anything
    /// else is parsed, for a response to reach its call.
    private func route(_ line: [UInt8], strings: JSONStringTable, keepingRaw: Bool, decoding: Bool) -> Routed {
        let value: JSONValue
        if decoding {
            // Read whatever it is: telling a notification from a response first would read it twice.
            switch read(line, strings: strings, keepingRaw: keepingRaw) {
            case .hot(let hot): return .notification(.hot(hot))
            case .value(let parsed): value = parsed
            case nil: return .skipped
            }
        } else {
            if CodexMonitorEnvelope.of(line) == .notification { return .kept(line) }
            guard let parsed = parsed(line, strings: nil) else { return .skipped }
            value = parsed
        }
        switch Message.classify(value) {
        case .response(let id, let result):
            guard state.withLock({ $0.pending[id] != nil }) else {
                logger.warning("skipping a CodexMonitor response to an unknown request id (late, after its timeout?)",
                               metadata: ["id": "\(id)"])
                return .skipped
            }
            return .response(id: id, result.mapError { .remote($0) })
        case .notification(let method, let params):
            // Decoded, or one the envelope could not vouch for (an escaped key, a repeated one).
            return decoding ? .notification(.notification(method: method, params: params, raw: value)) : .kept(line)
        case .request(let id, let method):
            logger.warning("skipping a request from the CodexMonitor daemon, which Tether does not answer",
                           metadata: ["id": "\(id.serialized)", "method": "\(method)"])
        case .invalid(let reason):
            logger.warning("skipping a CodexMonitor line that is not a response or a notification",
                           metadata: ["reason": "\(reason)", "line": "\(String(decoding: line.prefix(200), as: UTF8.self))"])
        }
        return .skipped
    }

    /// What the reader gathers to hand on: decoded notifications, or lines kept as bytes (a
    /// read does one or the other), and their wire bytes.
    private struct Handing {
        var incoming: [Incoming] = []
        var kept = KeptLines()
        var bytes = 0

        mutating func add(_ notification: Incoming, bytes: Int) {
            if !kept.isEmpty { incoming.append(.lines(kept)); kept = KeptLines() }  // in order
            incoming.append(notification)
            self.bytes += bytes
        }

        mutating func keep(_ line: [UInt8]) {
            kept.append(line)
            bytes += line.count
        }

        /// What it holds, in order, and how many notifications that is; empty afterwards.
        mutating func take() -> (batch: [Incoming], count: Int) {
            let count = incoming.count + kept.count
            if !kept.isEmpty { incoming.append(.lines(kept)) }
            defer { self = Handing() }
            return (incoming, count)
        }
    }

    /// Hands notifications to the consumer: waiting for room, unless a call waits for its
    /// response (then overfilling up to `callBudget`, and dropping past it).
    private func hand(_ handing: inout Handing) async {
        let bytes = handing.bytes
        let (batch, count) = handing.take()
        guard !batch.isEmpty else { return }
        // Throws only once the consumer is gone (`close`): nothing to hand it any more.
        let outcome = try? await notifications.send(contentsOf: batch, weight: bytes, count: count, mayWait: { !hasCallsWaiting },
                                                     overfill: callBudget)
        if outcome == .dropped {
            logger.debug("CodexMonitor notifications dropped: the consumer is behind while a call waits for its response",
                         metadata: ["count": "\(count)"])
        }
    }

    private func finish(_ end: Failure) {
        let pending: [ResponseSlot] = state.withLock { state in
            state.end = end
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for slot in pending { slot.fulfil(.failure(end)) }
        if case .closed(nil) = end { notifications.finish() } else { notifications.finish(throwing: end) }
    }
}

/// Where one call's response lands: filled once (response, timeout, cancel or close — first
/// wins), awaited once.
private final class ResponseSlot: Sendable {
    private struct State {
        var result: Result<JSONValue, CodexMonitorRPC.Failure>?
        var waiter: CheckedContinuation<Result<JSONValue, CodexMonitorRPC.Failure>, Never>?
    }

    private let state = Mutex(State())

    func fulfil(_ result: Result<JSONValue, CodexMonitorRPC.Failure>) {
        let waiter: CheckedContinuation<Result<JSONValue, CodexMonitorRPC.Failure>, Never>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    func value() async -> Result<JSONValue, CodexMonitorRPC.Failure> {
        await withCheckedContinuation { continuation in
            let ready: Result<JSONValue, CodexMonitorRPC.Failure>? = state.withLock { state in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Notification lines kept as bytes, one after another in one buffer: what a backlog read while
/// a call waits holds, without an allocation per line.
struct KeptLines: Sendable, Equatable {
    private var buffer: [UInt8] = []
    /// Where each line ends in `buffer`.
    private var ends: [Int] = []

    var count: Int { ends.count }
    var isEmpty: Bool { ends.isEmpty }

    mutating func append(_ line: [UInt8]) {
        buffer.append(contentsOf: line)
        ends.append(buffer.count)
    }

    /// Line `index` (from 0), as its own array (what the decoders read).
    func line(_ index: Int) -> [UInt8] {
        Array(buffer[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
    }

    /// Each line, in order.
    func forEach(_ body: ([UInt8]) throws -> Void) rethrows {
        for index in ends.indices { try body(line(index)) }
    }
}
