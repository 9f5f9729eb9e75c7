import Foundation

/// Benchmarks (`--flood N`): a long turn's stream, as fast as it can be queued — `turn/started`,
/// an agent message started, N deltas, its `item/completed` with the whole text,
/// `turn/completed` — in the shapes of a real turn, so a client maps it as one.
///
/// The turn runs in one thread, ``floodThreadID``, which exists from the start (one earlier
/// turn, so it can be resumed). A connection gets the flood once, when it first resumes that
/// thread, right after the resume's response: codex streams a thread's events to its
/// subscribers only, so a client's own calls (listing, resuming) are answered before the flood,
/// never behind it; a client resuming again (a resync) does not start a second one.
extension CodexAppServerSimulator {
    /// The flood's thread: `thread/resume` it to receive the flood.
    public static let floodThreadID = "019af100-d000-7000-8000-00000000f100"

    static func addFloodThread(to state: inout State) {
        let now = Wire.nowSeconds
        var record = ThreadRecord(
            id: floodThreadID, cwd: FileManager.default.currentDirectoryPath, createdAt: now, updatedAt: now,
            originator: "tether-sim", approvalPolicy: "on-request", sandbox: Shapes.sandbox(nil)!, model: defaultModel)
        record.preview = "flood"
        record.loaded = false
        record.turns = [TurnRecord(id: CodexAppServerIDs.uuidV7(), startedAtMs: Wire.nowMs, completedAtMs: Wire.nowMs, status: "completed")]
        state.threads[record.id] = record
        state.threadOrder.append(record.id)
    }

    func flood(to connection: Int) {
        guard let count = options.flood, state.withLock({ state -> Bool in
            guard state.connections[connection]?.flooded == false else { return false }
            state.connections[connection]?.flooded = true
            return true
        }) else { return }
        let thread = Self.floodThreadID
        let turn = CodexAppServerIDs.uuidV7()
        let item = CodexAppServerIDs.messageID()
        let piece = "flood chunk "
        Thread { [self] in
            func send(_ message: JSON) { state.withLock { $0.send(message, to: connection) } }
            send(Wire.notification("turn/started", [
                "threadId": .string(thread),
                "turn": Shapes.turn(id: turn, items: [], itemsView: "notLoaded", status: "inProgress",
                                    startedAt: Wire.nowSeconds, completedAt: nil, durationMs: nil),
            ]))
            send(Wire.notification("item/started", [
                "item": Shapes.agentMessage(id: item, text: ""), "threadId": .string(thread), "turnId": .string(turn),
                "startedAtMs": .int(Wire.nowMs),
            ]))
            // One delta's bytes, sent N times: the flood measures the reader, not this writer.
            let delta = Wire.notification("item/agentMessage/delta", [
                "threadId": .string(thread), "turnId": .string(turn), "itemId": .string(item), "delta": .string(piece),
            ]).serialized
            if let outbound = state.withLock({ $0.connections[connection]?.outbound }) {
                for _ in 0..<count { outbound.send(delta) }
            }
            let whole = Shapes.agentMessage(id: item, text: String(repeating: piece, count: count))
            send(Wire.notification("item/completed", [
                "item": whole, "threadId": .string(thread), "turnId": .string(turn), "completedAtMs": .int(Wire.nowMs),
            ]))
            send(Wire.notification("turn/completed", [
                "threadId": .string(thread),
                "turn": Shapes.turn(id: turn, items: [whole], itemsView: "summary", status: "completed",
                                    startedAt: Wire.nowSeconds, completedAt: Wire.nowSeconds, durationMs: 0),
            ]))
            if options.floodClose {
                let outbound = state.withLock { $0.connections[connection]?.outbound }
                outbound?.close()
            }
        }.start()
    }
}
