import Foundation

/// Benchmarks (`--flood N`): a long turn's stream for one connection, as fast as it can be
/// queued — `turn/started`, an agent message started, N deltas, its `item/completed` with the
/// whole text, `turn/completed` — in the shapes of a real turn, so a client maps it as one.
extension CodexAppServerSimulator {
    func flood(to connection: Int) {
        guard let count = options.flood else { return }
        let thread = CodexAppServerIDs.uuidV7()
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
