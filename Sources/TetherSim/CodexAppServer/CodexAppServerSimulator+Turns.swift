import Foundation

/// `turn/start` (a steer when the thread is busy), `turn/steer`, `turn/interrupt` (note §4).
extension CodexAppServerSimulator {
    /// The user's input as the userMessage item carries it (`text_elements` defaulted), and its text.
    static func userInput(_ params: JSON) throws -> CodexAppServerTurn.Input {
        let input = try params.required("input")
        guard let parts = input.arrayValue else { throw CodexAppServerRPCError.invalidType("input", expected: "a sequence") }
        var content: [JSON] = []
        var texts: [String] = []
        for var part in parts {
            if part["type"]?.stringValue == "text" {
                texts.append(part["text"]?.stringValue ?? "")
                if part["text_elements"] == nil { part["text_elements"] = [] }
            }
            content.append(part)
        }
        return .init(content: .array(content), clientID: params.optionalString("clientUserMessageId"), text: texts.joined(separator: "\n"))
    }

    private static func runningTurnJSON(_ turnID: String) -> JSON {
        Shapes.turn(id: turnID, items: [], itemsView: "notLoaded", status: "inProgress", startedAt: nil, completedAt: nil, durationMs: nil)
    }

    func turnStart(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let input = try Self.userInput(params)
        let (turn, steered) = try state.withLock { state -> (CodexAppServerTurn, Bool) in
            guard var record = state.threads[threadID], record.loaded, !record.archived else {
                throw CodexAppServerRPCError.threadNotFound(threadID)
            }
            try Self.applyOverrides(params, to: &record)
            // Busy: the input steers the running turn, whose id is the answer (note §4).
            if let active = record.active {
                state.threads[threadID] = record
                state.send(Wire.result(id: id, ["turn": Self.runningTurnJSON(active.turnID)]), to: connection)
                active.steer(input)
                return (active, true)
            }
            let turnID = CodexAppServerIDs.uuidV7()
            let turn = CodexAppServerTurn(sim: self, threadID: threadID, turnID: turnID, input: input)
            record.turns.append(TurnRecord(id: turnID, startedAtMs: Wire.nowMs))
            if record.preview.isEmpty { record.preview = input.text }
            record.updatedAt = Wire.nowSeconds
            record.active = turn
            record.activeFlags = []
            state.threads[threadID] = record
            state.send(Wire.result(id: id, ["turn": Self.runningTurnJSON(turnID)]), to: connection)
            return (turn, false)
        }
        if !steered { turn.launch() }
    }

    func turnSteer(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let input = try Self.userInput(params)
        let expected = try params.requiredString("expectedTurnId")
        try state.withLock { state in
            guard let record = state.threads[threadID] else { throw CodexAppServerRPCError.threadNotFound(threadID) }
            guard let active = record.active else { throw CodexAppServerRPCError("no active turn to steer") }
            guard active.turnID == expected else {
                throw CodexAppServerRPCError("expected active turn id `\(expected)` but found `\(active.turnID)`")
            }
            state.send(Wire.result(id: id, ["turnId": .string(active.turnID)]), to: connection)
            active.steer(input)
        }
    }

    /// `{}` at once; the turn then ends `interrupted`, and a pending request it raised is
    /// resolved after `turn/completed`.
    func turnInterrupt(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let turnID = try params.requiredString("turnId")
        let turn = try state.withLock { state -> CodexAppServerTurn in
            guard let record = state.threads[threadID] else { throw CodexAppServerRPCError.threadNotFound(threadID) }
            guard let active = record.active else { throw CodexAppServerRPCError("no active turn to interrupt") }
            guard active.turnID == turnID else {
                throw CodexAppServerRPCError("expected active turn id \(turnID) but found \(active.turnID)")
            }
            state.send(Wire.result(id: id, [:]), to: connection)
            return active
        }
        turn.interrupt()
    }
}
