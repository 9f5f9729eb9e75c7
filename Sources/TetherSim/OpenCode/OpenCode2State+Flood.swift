import Foundation

/// `Options.flood` on the 2.x server (benchmarks): one session whose execution streams `flood`
/// `session.text.delta`s of one text item, rendered once at start, and sent whole on every
/// `GET /api/event` after its `server.connected`. The execution's durable events (promoted, started, step,
/// text started and ended, succeeded) are in the session's log too, with the seqs the flood's
/// frames carry, so a client that reads the log after the stream sees the same turn.
extension OpenCode2State {
    func seedFlood(_ count: Int) {
        let sessionID = ids.descending("ses")
        let now = epochMilliseconds()
        sessions[sessionID] = sessionInfo(id: sessionID, title: "Flood", directory: options.directory, created: now)
        sessionOrder.append(sessionID)
        let inputID = ids.ascending("msg")
        let messageID = ids.ascending("msg")
        let model: OrderedJSON = ["providerID": "anthropic", "id": "claude-sonnet-4"]
        let text = (0..<count).map { "token\($0) " }.joined()
        messages[sessionID] = [
            ["id": .string(inputID), "type": "user", "text": "Stream as much as you can", "time": ["created": .int(now)]],
            ["id": .string(messageID), "type": "assistant", "agent": "build", "model": model,
             "content": [["type": "text", "text": .string(text)]], "finish": "stop", "time": ["created": .int(now), "completed": .int(now)]],
            ["id": .string(ids.ascending("msg")), "type": "idle", "outcome": "succeeded", "time": ["created": .int(now)]],
        ]

        let eventIDs = ids.ascendingSeries("evt", count: count + 7)
        var nextID = count
        func durable(_ type: String, _ data: OrderedJSON) -> Data {
            var data = data
            data["sessionID"] = .string(sessionID)
            let seq = (logs[sessionID]?.count ?? 0) + 1
            let event: OrderedJSON = [
                "id": .string(eventIDs(nextID)), "created": .int(now), "type": .string(type),
                "location": ["directory": .string(options.directory)],
                "durable": ["aggregateID": .string(sessionID), "seq": .int(seq), "version": 1], "data": data,
            ]
            nextID += 1
            logs[sessionID, default: []].append(event)
            return SSEResponse.dataFrame(event)
        }
        let item: OrderedJSON = ["assistantMessageID": .string(messageID), "ordinal": 0]
        var bytes = durable("session.input.promoted", ["inputID": .string(inputID)])
        bytes.append(durable("session.execution.started", [:]))
        bytes.append(durable("session.step.started", ["assistantMessageID": .string(messageID), "agent": "build", "model": model]))
        bytes.append(durable("session.text.started", item))

        // Fields: 0 the event id, 1 the piece of text.
        let template = FloodTemplate(fieldCount: 2) { field in
            SSEResponse.dataFrame([
                "id": .string(field[0]), "created": .int(now), "type": "session.text.delta",
                "location": ["directory": .string(options.directory)],
                "data": ["assistantMessageID": .string(messageID), "ordinal": 0, "delta": .string(field[1]),
                         "sessionID": .string(sessionID)],
            ])
        }
        var deltas: [UInt8] = []
        deltas.reserveCapacity(count * 260)
        for index in 0..<count {
            template.append([eventIDs(index), "token\(index) "], to: &deltas)
        }
        bytes.append(contentsOf: deltas)

        var ended = item
        ended["text"] = .string(text)
        bytes.append(durable("session.text.ended", ended))
        bytes.append(durable("session.step.ended", [
            "assistantMessageID": .string(messageID), "finish": "stop", "cost": 0,
            "tokens": ["input": 0, "output": .int(count), "reasoning": 0, "cache": ["read": 0, "write": 0]],
        ]))
        bytes.append(durable("session.execution.succeeded", [:]))
        floodBytes = bytes
    }
}
