import Foundation

extension CodexMonitorSimulator {
    /// Benchmarks (`Options.flood`): one turn of a thread no workspace lists, relayed as
    /// `app-server-event` lines — `turn/started`, then `count` `item/agentMessage/delta`s in
    /// agentMessage items as the shape says (a long part is started, gets its deltas and is
    /// completed with its whole text; a new part is started, gets one delta and never
    /// completes), then `turn/completed`. Rendered once, in chunks of whole lines, so each
    /// connection is written as fast as it reads.
    enum Flood {
        static let threadID = "019a0000-f100-7000-8000-000000000001"
        static let turnID = "019a0000-f100-7000-8000-000000000002"
        /// About this many bytes a chunk (always whole lines).
        static let chunkSize = 64 * 1024

        static func render(count: Int, shape: FloodShape, workspaceID: String, codex: CodexFlavor) -> [[UInt8]] {
            let emittedAtMs = AppServer.nowMs
            func line(_ message: JSON) -> Data {
                var stamped = message
                if codex == .current { stamped["emittedAtMs"] = .int(emittedAtMs) }
                return Data((Wire.appServerEvent(workspaceID: workspaceID, message: stamped).serialized + "\n").utf8)
            }
            // Fields: 0 the item id, 1 text.
            let started = FloodTemplate(fieldCount: 1) { field in
                line(AppServer.itemStarted(AppServer.agentMessageItem(id: field[0], text: ""), threadID: threadID, turnID: turnID))
            }
            let delta = FloodTemplate(fieldCount: 2) { field in
                line(AppServer.delta("item/agentMessage/delta", threadID: threadID, turnID: turnID, itemID: field[0], delta: field[1]))
            }
            let completed = FloodTemplate(fieldCount: 2) { field in
                line(AppServer.itemCompleted(AppServer.agentMessageItem(id: field[0], text: field[1]), threadID: threadID, turnID: turnID))
            }

            var chunks: [[UInt8]] = []
            var chunk: [UInt8] = []
            chunk.reserveCapacity(chunkSize + 4096)
            func cut(force: Bool = false) {
                guard force ? !chunk.isEmpty : chunk.count >= chunkSize else { return }
                chunks.append(chunk)
                chunk.removeAll(keepingCapacity: true)
            }
            chunk += line(AppServer.turnStarted(threadID: threadID, turn: AppServer.startedTurn(id: turnID)))
            var item = ""
            var text = ""
            for index in 0..<count {
                if shape.opensPart(index) {
                    item = "msg_flood_\(shape.part(ofDelta: index))"
                    started.append([item], to: &chunk)
                    text = ""
                }
                let piece = "token\(index) "
                delta.append([item, piece], to: &chunk)
                if shape == .longParts {
                    text += piece
                    if index == count - 1 || shape.opensPart(index + 1) { completed.append([item, text], to: &chunk) }
                }
                cut()
            }
            let turn: JSON = ["id": .string(turnID), "items": [], "status": "completed", "error": .null]
            chunk += line(AppServer.turnCompleted(threadID: threadID, turn: turn))
            cut(force: true)
            return chunks
        }
    }
}
