import Logging
import Synchronization
import TetherCore
import TetherNet

/// JSON-RPC with the CodexMonitor daemon over one line connection.
///
/// Many calls may be in flight; the daemon answers them in any order (each request is its own
/// task upstream), so responses are matched by id, and each call has its own timeout.
/// Notifications arrive interleaved with responses and are queued for one consumer as the line's
/// bytes (told apart from responses by `CodexMonitorEnvelope`, without parsing), bounded in
/// bytes: the bound on the queue is the bound on its memory. The consumer parses each line as
/// it takes it — or, once a follower has asked for it (`setDecoding`), the reader parses every
/// line in its own task (the parse tells notifications from responses: no envelope scan first),
/// so that parsing and the consumer's work use two cores. A follower takes what is queued a
/// batch at a time (`poll(upTo:timeout:)`): one hand-over per burst. When the queue is full
/// the reader stops reading (TCP then pushes back on the daemon) until the consumer catches up
/// — unless a call is waiting for its response: that response must still be read, so then what
/// overflows is dropped and reported as ``Incoming/lost(count:)`` (the consumer re-reads; the
/// daemon itself drops events for slow clients the same way, silently). Unparsable lines and
/// responses to unknown ids are logged and skipped.
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

    /// What the notification consumer receives.
    enum Incoming: Sendable, Equatable {
        /// A daemon notification; `raw` is the whole line, for `--raw`.
        case notification(method: String, params: JSONValue, raw: JSONValue)
        /// An `app-server-event` carrying an item delta or an `item/started`, read without
        /// parsing the line whole (only when the consumer keeps no `raw`: see `poll`).
        case hot(CodexMonitorHotLine)
        /// This many notifications were dropped here because the consumer fell behind.
        case lost(count: Int)
    }

    /// The outcome of waiting with a time limit: what came, or why nothing did.
    enum Polled<Received: Sendable & Equatable>: Sendable, Equatable {
        case incoming(Received)
        case timedOut
        /// The connection ended cleanly (a broken one throws).
        case ended
    }

    /// Waiting for one notification.
    typealias Poll = Polled<Incoming>
    /// Waiting for a burst: what was queued, in order (never empty), up to the limit asked for.
    typealias Batch = Polled<[Incoming]>

    /// What waits in the queue: a notification line as it arrived, lines that queued one after
    /// another as bytes (a run), one the reader decoded (with the length of its line), or a
    /// count of dropped ones.
    private enum Entry {
        case line([UInt8])
        case lines(LineRun)
        case decoded(Incoming, bytes: Int)
        case lost(Int)

        /// What it holds against the budget: the wire bytes it came from.
        var bytes: Int {
            switch self {
            case .line(let line): line.count
            case .lines(let run): run.bytes
            case .decoded(_, let bytes): bytes
            case .lost: 0
            }
        }

        /// The notifications it hands over (a count of dropped ones is one).
        var count: Int {
            if case .lines(let run) = self { return run.count }
            return 1
        }

        /// Whether this is a run with room for `line`.
        func runHasRoom(for line: [UInt8]) -> Bool {
            if case .lines(let run) = self { return run.hasRoom(for: line) }
            return false
        }

        /// The run this slot holds, taken out (the slot left `.lost(0)` until it is put back):
        /// the caller then holds the run's buffer alone, so changing it copies nothing.
        mutating func takeRun() -> LineRun? {
            guard case .lines(let run) = self else { return nil }
            self = .lost(0)
            return run
        }
    }

    /// What one wait for the queue yields, before the lines are parsed: one entry or more, in order.
    private enum Taken {
        case entries([Entry])
        case timedOut
        case ended
    }

    private struct State {
        var nextID: Int64 = 1
        var pending: [Int64: ResponseSlot] = [:]
        var queue: [Entry] = []
        var head = 0
        var queuedBytes = 0
        var waiter: (token: Int, continuation: CheckedContinuation<Taken, any Error>)?
        var waiterTokens = 0
        var end: Failure?
        /// The reader, paused on a full queue: resumed once the consumer has caught up, a call
        /// needs its response read, or the connection ends.
        var pausedReader: CheckedContinuation<Void, Never>?
        /// `close()` was called: the reader must not pause any more.
        var closing = false
        /// How notifications are decoded (`setDecoding`).
        var decoding = Decoding()
        /// Lines held in runs beyond one per run: queued notifications are the entries after
        /// `head` and these.
        var linesInRuns = 0
        /// Times the reader offered a notification the queue had refused (for tests: once per
        /// time the consumer made room, not once per turn of a loop).
        var reoffers = 0

        /// The oldest entry, released from the queue at once: a flood keeps the queue from
        /// ever running empty, so taken slots must not hold their lines until it does.
        mutating func takeFirst() -> Entry? {
            guard head < queue.count else { return nil }
            var entry = Entry.lost(0)
            swap(&entry, &queue[head])  // moved out: a decoded notification's strings are not retained again
            head += 1
            queuedBytes -= entry.bytes
            linesInRuns -= entry.count - 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: queue.capacity <= 4096)
                head = 0
            } else if head >= 1024, head * 2 >= queue.count {
                queue.removeFirst(head)  // amortized: as many moves as entries taken
                head = 0
            }
            return entry
        }

        /// Whether the reader decodes the notification it is about to queue, and keeping `raw`
        /// or not; nil: it queues the line's bytes.
        var decodesAhead: Bool? {
            let ahead = decoding.ahead && (pending.isEmpty || queuedBytes < CodexMonitorRPC.decodeAheadBudget)
            return ahead ? decoding.keepingRaw : nil
        }

        /// The oldest notifications, up to `limit` of them and `bytes` of wire (at least one),
        /// released from the queue at once: the whole queue is handed over as it is when it fits
        /// (no entry copied), else entry by entry, the front of a run split off when only part
        /// of it fits the limit. The bound in bytes bounds what the consumer decodes at once from
        /// lines queued as bytes (a backlog read while a call waited).
        mutating func takeFirst(upTo limit: Int, bytes byteLimit: Int) -> [Entry] {
            if head == 0, queue.count + linesInRuns <= limit, queuedBytes <= byteLimit {
                var taken: [Entry] = []
                taken.reserveCapacity(Swift.min(queue.count, 4096))  // the next burst's room
                swap(&taken, &queue)
                queuedBytes = 0
                linesInRuns = 0
                return taken
            }
            var entries: [Entry] = []
            var taken = 0
            var count = 0
            while count < limit, head < queue.count, entries.isEmpty || taken + queue[head].bytes <= byteLimit {
                if queue[head].count > limit - count, var run = queue[head].takeRun() {
                    // Only part of the run fits: its first lines are copied out, the rest stays.
                    let front = run.removeFirst(limit - count)
                    queue[head] = .lines(run)
                    linesInRuns -= front.count  // the run stays one entry, `front.count` lines shorter
                    queuedBytes -= front.bytes
                    entries.append(front.count == 1 ? .line(front.line(0)) : .lines(front))
                    break
                }
                guard let entry = takeFirst() else { break }
                taken += entry.bytes
                count += entry.count
                entries.append(entry)
            }
            return entries
        }

        /// Queues an entry after the others. A run that stops being the last entry keeps only
        /// the room its lines take: however runs, decoded entries and drop markers alternate,
        /// only the last run holds room it may not fill, and the bound in wire bytes stays the
        /// bound in memory.
        mutating func append(_ entry: Entry) {
            if queue.count > head, var run = queue[queue.count - 1].takeRun() {
                run.shrinkToFit()
                queue[queue.count - 1] = .lines(run)
            }
            queue.append(entry)
        }

        /// Resumes a paused reader (the caller resumes what this returns outside the lock).
        mutating func takePausedReader() -> CheckedContinuation<Void, Never>? {
            defer { pausedReader = nil }
            return pausedReader
        }
    }

    private let connection: any LineConnection
    private let logger: Logger
    private let notificationBudget: Int
    private let callBudget: Int
    private let state = Mutex(State())

    /// How many wire bytes of notifications the reader decodes ahead of the consumer. The reader
    /// hands over a line at a time and, once paused, reads on when half of this is left: 8 KiB
    /// (what a pipeline stage, which hands over a network read at a time, keeps ahead) paused it
    /// every dozen lines and cost more CPU than it saved; 64 KiB left both cores idle a fifth
    /// of a flood, in pauses; 256 KiB took 5 % off the new-parts flood, and 1 MiB (about 4 MB
    /// of decoded lines) 8 % more, peak RSS unchanged; 2 MiB took nothing more (bench/PROFILE.md).
    static let decodeAheadBudget = 1 << 20

    /// - Parameters:
    ///   - notificationBudget: bytes of notification lines queued for the consumer before the
    ///     reader pauses. Lines are held as bytes: this is (within the array headers) their memory.
    ///   - callBudget: while a call waits for its response the reader cannot pause (the
    ///     response comes on the same connection): it queues up to this many bytes, then drops
    ///     and reports them as lost.
    init(connection: any LineConnection, logger: Logger, notificationBudget: Int = 2 << 20, callBudget: Int = 16 << 20) {
        self.connection = connection
        self.logger = logger
        self.notificationBudget = notificationBudget
        self.callBudget = max(callBudget, notificationBudget)
    }

    /// Starts reading. Call once.
    func start() {
        Task { [self] in await readLoop() }
    }

    /// Closes the connection; pending calls fail with `.closed(nil)`.
    func close() {
        let reader = state.withLock { state in
            state.closing = true
            return state.takePausedReader()
        }
        reader?.resume()
        connection.close()
    }

    // MARK: Calls

    /// Sends `method` with `params` and returns the daemon's `result` as sent (unwrapping the
    /// app-server's raw results is the caller's business: see `CodexMonitorResult`).
    func call(_ method: String, params: JSONValue? = nil, timeout: Duration) async throws(Failure) -> JSONValue {
        let slot = ResponseSlot()
        let (registered, reader): (Result<Int64, Failure>, CheckedContinuation<Void, Never>?) = state.withLock { state in
            if let end = state.end { return (.failure(end), nil) }
            let id = state.nextID
            state.nextID += 1
            state.pending[id] = slot
            // A paused reader must read on: this call's response comes on the same connection.
            return (.success(id), state.takePausedReader())
        }
        reader?.resume()
        let id = try registered.get()
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

    /// The next notification; `nil` once the connection has ended cleanly. Throws
    /// `Failure.closed` when it broke.
    func nextNotification() async throws -> Incoming? {
        switch try await poll(timeout: nil) {
        case .incoming(let incoming): return incoming
        case .ended, .timedOut: return nil
        }
    }

    /// How notifications are decoded. `keepingRaw` false: item deltas and `item/started` come as
    /// `.hot`, read straight from their bytes (`CodexMonitorHotLine.read`), and others keep no
    /// `raw`. `ahead`: the reader decodes what it queues, in its own task (a line that is not
    /// JSON is logged and skipped there) — for a follower, whose work on each notification would
    /// otherwise include parsing it. The queue then holds at most `decodeAheadBudget` bytes' worth while no call
    /// waits (the reader pauses there: TCP pushes back on the daemon); decoded notifications take
    /// more memory than their lines, so past that — while a call's response must still be read —
    /// lines wait as bytes, for `poll` to decode.
    struct Decoding: Sendable {
        var keepingRaw = true
        var ahead = false
    }

    /// Decides how notifications are decoded from now on (the default: in `poll`, keeping `raw`).
    func setDecoding(_ decoding: Decoding) {
        state.withLock { $0.decoding = decoding }
    }

    /// Times the reader offered a refused notification again (for tests).
    var reoffers: Int { state.withLock { $0.reoffers } }

    /// What waits in the queue: lines as bytes, the buffers holding them (a run of lines is one)
    /// and the bytes those runs reserve, notifications decoded ahead, the wire bytes they hold
    /// against the budget, and how many notifications (a drop marker is one) the queue counts
    /// (for tests).
    var queued: (lines: Int, buffers: Int, reserved: Int, decoded: Int, bytes: Int, counted: Int) {
        state.withLock { state in
            var lines = 0, buffers = 0, reserved = 0, decoded = 0
            for entry in state.queue[state.head...] {
                switch entry {
                case .line:
                    lines += 1
                    buffers += 1
                case .lines(let run):
                    lines += run.count
                    buffers += 1
                    reserved += run.reserved
                case .decoded: decoded += 1
                case .lost: break
                }
            }
            // What the queue counts it holds (its entries and the lines runs hold beyond one):
            // the fast path of `takeFirst(upTo:bytes:)` trusts it.
            let counted = state.queue.count - state.head + state.linesInRuns
            return (lines, buffers, reserved, decoded, state.queuedBytes, counted)
        }
    }

    /// The next notification, or `.timedOut` when none comes within `timeout` (nil: no limit).
    /// Nothing is lost to the timeout: a notification is handed over or left queued, never both.
    func poll(timeout: Duration?, strings: JSONStringTable? = nil) async throws -> Poll {
        switch try await poll(upTo: 1, timeout: timeout, strings: strings) {
        case .incoming(let batch): return .incoming(batch[0])
        case .timedOut: return .timedOut
        case .ended: return .ended
        }
    }

    /// Every notification queued, up to `limit` (and `decodeAheadBudget` bytes of wire), in
    /// order — waiting for the first up to `timeout` (nil: no limit; zero: only what is
    /// queued). One hand-over for a burst, where
    /// `poll(timeout:)` takes the queue's lock and perhaps suspends once per line. Nothing is
    /// lost to the timeout. A line the reader did not decode ahead is decoded here (`Decoding`),
    /// in the consumer's task; one that is not JSON is logged and skipped. `strings`: the
    /// consumer's table of recent ids (the workspace, thread and turn ids every line repeats),
    /// shared across its lines.
    func poll(upTo limit: Int, timeout: Duration?, strings: JSONStringTable? = nil) async throws -> Batch {
        precondition(limit > 0, "a batch holds one notification or more")
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            switch try await take(upTo: limit, timeout: deadline.map { $0 - .now }) {
            case .entries(var entries):
                var batch: [Incoming] = []
                batch.reserveCapacity(entries.count)
                var keepingRaw: Bool?  // read once a batch has a line to decode
                func decodeLine(_ line: [UInt8]) {
                    let keep = keepingRaw ?? state.withLock { $0.decoding.keepingRaw }
                    keepingRaw = keep
                    if let incoming = decode(line, strings: strings, keepingRaw: keep) { batch.append(incoming) }
                }
                // Each entry is moved into the batch, not copied (a copy of a decoded
                // notification is a retain of each of its strings, which the reader on the
                // other core made).
                for index in entries.indices {
                    switch entries.moveOut(at: index, leaving: .lost(0)) {
                    case .line(let line): decodeLine(line)
                    case .lines(let run): run.forEach(decodeLine)
                    case .decoded(let incoming, _): batch.append(incoming)
                    case .lost(let count): batch.append(.lost(count: count))
                    }
                }
                if !batch.isEmpty { return .incoming(batch) }
            case .timedOut: return .timedOut
            case .ended: return .ended
            }
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

    /// A line read for a consumer: a hot line straight from its bytes when the consumer keeps
    /// no `raw`, else the parse.
    private enum Read {
        case hot(CodexMonitorHotLine)
        case value(JSONValue)
    }

    /// How a line is read, by the consumer (`decode`) or by the reader ahead of it (`handle`);
    /// nil (logged) when it is not JSON.
    private func read(_ line: [UInt8], strings: JSONStringTable?, keepingRaw: Bool) -> Read? {
        if !keepingRaw, let hot = CodexMonitorHotLine.read(line, strings: strings) { return .hot(hot) }
        return parsed(line, strings: strings).map(Read.value)
    }

    /// A queued line as the consumer receives it; nil (logged) when it is not a notification after all.
    private func decode(_ line: [UInt8], strings: JSONStringTable?, keepingRaw: Bool) -> Incoming? {
        let value: JSONValue
        switch read(line, strings: strings, keepingRaw: keepingRaw) {
        case .hot(let hot): return .hot(hot)
        case .value(let parsed): value = parsed
        case nil: return nil
        }
        guard case .notification(let method, let params) = Message.classify(value) else {
            logger.warning("skipping a CodexMonitor line that is not a notification",
                           metadata: ["line": "\(String(decoding: line.prefix(200), as: UTF8.self))"])
            return nil
        }
        return .notification(method: method, params: params, raw: value)
    }

    /// The oldest queued notifications, up to `limit` of them and `decodeAheadBudget` bytes of
    /// wire (`State.takeFirst(upTo:bytes:)`), waiting for one up to `timeout` (nil: no limit;
    /// zero or less: only what is queued). The timer is armed only when the consumer has to wait.
    private func take(upTo limit: Int, timeout: Duration?) async throws -> Taken {
        let token = state.withLock { state -> Int in
            state.waiterTokens += 1
            return state.waiterTokens
        }
        var timer: Task<Void, any Error>?
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Taken, any Error>) in
                enum Outcome { case ready(Taken, CheckedContinuation<Void, Never>?), failed(any Error), wait }
                let outcome: Outcome = state.withLock { state in
                    if state.head < state.queue.count {
                        let entries = state.takeFirst(upTo: limit, bytes: Self.decodeAheadBudget)
                        // Caught up to half the budget: a paused reader reads on.
                        let reader = state.queuedBytes <= budget(state) / 2 ? state.takePausedReader() : nil
                        return .ready(.entries(entries), reader)
                    }
                    if let end = state.end {
                        if case .closed(nil) = end { return .ready(.ended, nil) }
                        return .failed(end)
                    }
                    if Task.isCancelled { return .failed(CancellationError()) }
                    if let timeout, timeout <= .zero { return .ready(.timedOut, nil) }
                    precondition(state.waiter == nil, "CodexMonitorRPC has one notification consumer")
                    state.waiter = (token, continuation)
                    return .wait
                }
                switch outcome {
                case .ready(let taken, let reader):
                    reader?.resume()
                    continuation.resume(returning: taken)
                case .failed(let error): continuation.resume(throwing: error)
                case .wait:
                    // Registered first: a timer that fires now finds the waiter to time out.
                    timer = timeout.map { timeout in
                        Task { [self] in
                            try await Task.sleep(for: timeout)
                            resumeWaiter(token: token, with: .success(.timedOut))
                        }
                    }
                }
            }
        } onCancel: {
            resumeWaiter(token: token, with: .failure(CancellationError()))
        }
    }

    private func resumeWaiter(token: Int, with result: Result<Taken, any Error>) {
        let waiter: CheckedContinuation<Taken, any Error>? = state.withLock { state in
            guard let waiter = state.waiter, waiter.token == token else { return nil }  // handed an entry already
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(with: result)
    }

    // MARK: Reading

    private func readLoop() async {
        var end = Failure.closed(nil)
        // The reader's own table, for what it decodes ahead (a table is one task's).
        let strings = JSONStringTable(vocabulary: CodexMonitorHotLine.busyWords)
        do {
            while let lines = try await connection.receiveBatch() {
                strings.startBatch()
                for line in lines {
                    if let held = handle(line, strings: strings) { await deliverWhenThereIsRoom(held) }
                }
            }
        } catch let error as NetError {
            end = .closed(error)
        } catch {
            end = .closed(NetError(.other, url: "", detail: "\(error)"))
        }
        finish(end)
    }

    /// Routes one line; returns a notification that must wait for room in the queue.
    /// Notifications are queued unparsed (or decoded: `setDecoding`); everything else is parsed here.
    private func handle(_ line: [UInt8], strings: JSONStringTable) -> Entry? {
        if let keepingRaw = state.withLock({ $0.decodesAhead }) {
            // Read whatever it is: telling a notification from a response first would read it twice.
            switch read(line, strings: strings, keepingRaw: keepingRaw) {
            case .hot(let hot): return enqueue(.decoded(.hot(hot), bytes: line.count))
            case .value(let value): return route(value, line: line, decodedAhead: true)
            case nil: return nil
            }
        }
        if CodexMonitorEnvelope.of(line) == .notification { return enqueue(.line(line)) }
        guard let value = parsed(line, strings: nil) else { return nil }
        return route(value, line: line, decodedAhead: false)
    }

    /// A parsed line: a response goes to its call, a notification to the queue — decoded when
    /// the reader decodes ahead (`decodedAhead`, decided once per line by `handle`), else as the
    /// line's bytes, as any other.
    private func route(_ value: JSONValue, line: [UInt8], decodedAhead: Bool) -> Entry? {
        switch Message.classify(value) {
        case .response(let id, let result):
            let slot = state.withLock { $0.pending.removeValue(forKey: id) }
            guard let slot else {
                logger.warning("skipping a CodexMonitor response to an unknown request id (late, after its timeout?)",
                               metadata: ["id": "\(id)"])
                return nil
            }
            slot.fulfil(result.mapError { .remote($0) })
        case .notification(let method, let params):
            // Decoded ahead, or one the envelope could not vouch for (an escaped key, a repeated
            // one): still a notification, queued like the others.
            if decodedAhead { return enqueue(.decoded(.notification(method: method, params: params, raw: value), bytes: line.count)) }
            return enqueue(.line(line))
        case .request(let id, let method):
            logger.warning("skipping a request from the CodexMonitor daemon, which Tether does not answer",
                           metadata: ["id": "\(id.serialized)", "method": "\(method)"])
        case .invalid(let reason):
            logger.warning("skipping a CodexMonitor line that is not a response or a notification",
                           metadata: ["reason": "\(reason)", "line": "\(String(decoding: line.prefix(200), as: UTF8.self))"])
        }
        return nil
    }

    /// The queued bytes at which the reader pauses while no call waits: `notificationBudget`,
    /// or while it decodes ahead, the bound on that.
    private func budget(_ state: State) -> Int {
        state.decoding.ahead ? min(notificationBudget, Self.decodeAheadBudget) : notificationBudget
    }

    /// Pauses the reader until the queue has room (or a call needs its response read, or the
    /// connection ended), then offers `held` again; repeats while it is still refused.
    private func deliverWhenThereIsRoom(_ held: Entry) async {
        var held: Entry? = held
        while let waiting = held {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow: Bool = state.withLock { state in
                    // Offered again only once it fits, as `enqueue` decides: a line larger than the
                    // room left, with the queue at most half full, would otherwise be offered and
                    // refused over and over, the reader busy until the consumer takes some.
                    state.reoffers += 1
                    let fits = state.queuedBytes == 0 || state.queuedBytes + waiting.bytes <= budget(state)
                    if fits || !state.pending.isEmpty || state.end != nil || state.closing { return true }
                    state.pausedReader = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
            held = enqueue(waiting)
        }
    }

    /// Hands a notification to the consumer or queues it; returns it when the queue is full
    /// and the reader may wait (no call needs a response read), dropping it otherwise.
    private func enqueue(_ entry: Entry) -> Entry? {
        enum Step { case delivered(CheckedContinuation<Taken, any Error>), queued, dropped, full }
        let step: Step = state.withLock { state in
            if let waiter = state.waiter, state.head == state.queue.count {
                state.waiter = nil
                return .delivered(waiter.continuation)
            }
            // One line is always taken, however large: the budget bounds the backlog.
            let limit = state.pending.isEmpty ? budget(state) : callBudget
            guard state.queuedBytes == 0 || state.queuedBytes + entry.bytes <= limit else {
                if state.pending.isEmpty, state.end == nil, !state.closing { return .full }
                // Dropped: count it on a trailing `lost` marker (which may exceed the budget by one entry).
                if state.queue.count > state.head, case .lost(let count) = state.queue[state.queue.count - 1] {
                    state.queue[state.queue.count - 1] = .lost(count + 1)
                } else {
                    state.append(.lost(1))
                }
                return .dropped
            }
            state.queuedBytes += entry.bytes
            if case .line(let line) = entry, state.queue.count > state.head {
                // After another line queued as bytes: into one run with it (a backlog — lines a
                // reader that may not pause reads while a call waits, or a consumer's backlog
                // when nothing decodes ahead — then holds its lines in a few buffers, not an
                // allocation each).
                let last = state.queue.count - 1
                if state.queue[last].runHasRoom(for: line), var run = state.queue[last].takeRun() {
                    run.append(line)
                    state.queue[last] = .lines(run)
                    state.linesInRuns += 1
                    return .queued
                }
                if case .line(let previous) = state.queue[last], previous.count + line.count <= LineRun.capacity {
                    var run = LineRun(previous)
                    run.append(line)
                    state.queue[last] = .lines(run)
                    state.linesInRuns += 1
                    return .queued
                }
            }
            state.append(entry)
            return .queued
        }
        switch step {
        case .delivered(let waiter): waiter.resume(returning: .entries([entry]))
        case .queued: break
        case .dropped: logger.debug("CodexMonitor notification dropped: the consumer is behind while a call waits for its response")
        case .full: return entry
        }
        return nil
    }

    private func finish(_ end: Failure) {
        let (pending, waiter, reader): ([ResponseSlot], CheckedContinuation<Taken, any Error>?, CheckedContinuation<Void, Never>?) = state.withLock { state in
            state.end = end
            let pending = Array(state.pending.values)
            state.pending = [:]
            let waiter = state.head == state.queue.count ? state.waiter?.continuation : nil
            if waiter != nil { state.waiter = nil }
            return (pending, waiter, state.takePausedReader())
        }
        reader?.resume()
        for slot in pending { slot.fulfil(.failure(end)) }
        if let waiter {
            if case .closed(nil) = end { waiter.resume(returning: .ended) } else { waiter.resume(throwing: end) }
        }
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

/// Notification lines queued one after another as bytes, in one buffer: what a backlog holds
/// without an allocation per line — a reader that may not pause (a call waits for its response
/// behind the lines) or a consumer that decodes as it takes (nothing decodes ahead).
struct LineRun {
    /// A run's size, reserved at once: up to a few hundred lines.
    static let capacity = 64 << 10

    private var buffer: [UInt8] = []
    /// Where each line ends in `buffer`.
    private var ends: [Int] = []
    /// Lines already split off the front (`removeFirst`).
    private var first = 0

    init(_ line: [UInt8]) {
        buffer.reserveCapacity(Swift.max(Self.capacity, line.count))
        append(line)
    }

    private init(lines: ArraySlice<UInt8>, ends: [Int]) {
        buffer = Array(lines)
        self.ends = ends
    }

    /// The lines it holds.
    var count: Int { ends.count - first }

    /// The wire bytes of the lines it holds.
    var bytes: Int { buffer.count - start(of: first) }

    /// The bytes its buffer takes, room included (for tests).
    var reserved: Int { buffer.capacity }

    func hasRoom(for line: [UInt8]) -> Bool { buffer.count + line.count <= Self.capacity }

    /// Lets go of the room reserved for lines that will not come.
    mutating func shrinkToFit() {
        guard buffer.capacity - buffer.count > 4096 else { return }
        var fitted: [UInt8] = []
        fitted.reserveCapacity(buffer.count)
        fitted.append(contentsOf: buffer)
        buffer = fitted
    }

    mutating func append(_ line: [UInt8]) {
        buffer.append(contentsOf: line)
        ends.append(buffer.count)
    }

    /// Splits off the first `count` lines (fewer than it holds) as a run of their own.
    mutating func removeFirst(_ count: Int) -> LineRun {
        precondition(count > 0 && count < self.count, "a split leaves lines on both sides")
        let from = start(of: first)
        let to = ends[first + count - 1]
        let front = LineRun(lines: buffer[from..<to], ends: ends[first..<(first + count)].map { $0 - from })
        first += count
        return front
    }

    /// Its line at `index` (0: the first it holds), as an array of its own.
    func line(_ index: Int) -> [UInt8] {
        Array(buffer[start(of: first + index)..<ends[first + index]])
    }

    /// Each line, in order, as its own array (what the decoders read).
    func forEach(_ body: ([UInt8]) -> Void) {
        for index in first..<ends.count {
            body(Array(buffer[start(of: index)..<ends[index]]))
        }
    }

    private func start(of index: Int) -> Int { index == 0 ? 0 : ends[index - 1] }
}
