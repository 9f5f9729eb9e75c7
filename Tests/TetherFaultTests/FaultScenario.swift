import Foundation
@testable import TetherTestSupport

/// The faults the harness injects, each a row per backend in the summary table.
enum FaultScenario: String, CaseIterable, Sendable {
    /// No fault: the references every other row is judged against (a short and a long turn).
    case baseline = "no fault (reference)"
    case baselineLong = "no fault, long turn (reference)"
    /// The server restarts 20 times during one turn: every connection reset, the port refusing
    /// connections for a moment, then back with its state.
    case restarts = "server restarted ×20"
    /// The stream goes silent (connection open) for longer than the profile's liveness.
    case stall = "stall > liveness"
    /// Every server→client byte of the stream in its own TCP segment.
    case drip = "bytes dripped one at a time"
    /// Stream connection n is reset n bytes into a frame, for n = 0, 1, 2, …
    case cuts = "frame cut at every byte position"
    /// Malformed frames injected between the real ones.
    case malformed = "malformed JSON / SSE fields"
    /// One 10 MB frame injected into the stream.
    case hugeLine = "10 MB line"
    /// The server's credentials change mid-turn and the connection drops.
    case revoked = "credentials revoked mid-session"
    /// Through a tunnel (`tunnel = NAME`, a real sshd on loopback): sshd is killed with its
    /// sessions and started again, 3 times during one turn.
    case sshdRestarted = "tunnel's sshd restarted ×3"

    /// The profile's `liveness` and `reconnect_delay` (seconds).
    static let liveness = 2.0
    static let reconnectDelay = 0.05

    /// How many streamed pieces the turn has: long enough for the faults to land mid-turn.
    var turnLength: Int {
        switch self {
        case .baseline, .drip, .malformed, .hugeLine, .stall, .revoked: return Self.shortTurn
        case .baselineLong, .restarts, .cuts, .sshdRestarted: return Self.longTurn
        }
    }

    static let shortTurn = 200
    static let longTurn = 1200

    var isReference: Bool { self == .baseline || self == .baselineLong }

    static let restartCount = 20
    static let sshdRestartCount = 3
    static let cutPositions = 240

    func fault(_ framing: FaultProxy.Framing) -> FaultProxy.Fault {
        switch self {
        case .baseline, .baselineLong, .restarts, .revoked, .sshdRestarted: return .none
        case .stall: return .stall(afterFrames: 8, duration: .milliseconds(Int64((Self.liveness + 2.5) * 1000)))
        case .drip: return .drip(delay: .microseconds(30))
        // A CodexMonitor connection's first lines answer auth and the resync: cut after them.
        case .cuts: return .cutAtEveryByte(afterFrames: framing == .lines ? 6 : 2, cuts: Self.cutPositions)
        case .malformed: return .inject(everyFrames: 3, payloads: Self.malformed(framing), limit: 60)
        case .hugeLine: return .inject(everyFrames: 5, payloads: [Self.huge(framing)], limit: 1)
        }
    }

    /// Frames a server should never send: broken JSON, JSON of the wrong shape, bad SSE fields,
    /// invalid UTF-8, an unknown response id. None carries a valid SSE `id`, so a cursor is untouched.
    static func malformed(_ framing: FaultProxy.Framing) -> [[UInt8]] {
        let json: [String] = [
            "{not json", "[1,2", "{\"type\":", "null", "[]", "\"just a string\"", "{}", "12345",
            "{\"type\":\"message.part.delta\",\"properties\":{}}", "{\"type\":42,\"payload\":[]}",
            "{\"method\":\"app-server-event\",\"params\":{\"message\":\"oops\"}}", "{\"id\":987654,\"result\":{}}",
            "{\"method\":5,\"params\":null}", "{\"type\":\"item.agentMessage.delta\",\"payload\":null}",
        ]
        let invalidUTF8: [UInt8] = [0xFF, 0xFE, 0xC3, 0x28, 0x7B]
        switch framing {
        case .sse:
            var frames = json.map { Array("data: \($0)".utf8) }
            frames.append(Array("event: \u{1}weird\ndata: {\"a\":".utf8))
            frames.append(Array("id: bad\u{0}id\ndata: {}".utf8))
            frames.append(Array("retry: soon\ndata: [".utf8))
            frames.append(Array(": only a comment".utf8))
            frames.append(Array("data: ".utf8) + invalidUTF8)
            frames.append(Array("dataless line without colon".utf8))
            return frames
        case .lines:
            return json.map { Array($0.utf8) } + [invalidUTF8, []]
        case .webSocket:
            return json.map { Array($0.utf8) } + [invalidUTF8]
        }
    }

    /// A 10 MB frame of valid JSON that no backend defines.
    static func huge(_ framing: FaultProxy.Framing) -> [UInt8] {
        let pad = String(repeating: "x", count: 10 << 20)
        switch framing {
        case .sse: return Array("data: {\"type\":\"tether.fault.padding\",\"properties\":{\"pad\":\"\(pad)\"}}".utf8)
        case .lines: return Array("{\"method\":\"tether-fault-padding\",\"params\":{\"pad\":\"\(pad)\"}}".utf8)
        case .webSocket: return Array("{\"type\":\"tether-fault-padding\",\"pad\":\"\(pad)\"}".utf8)
        }
    }
}
