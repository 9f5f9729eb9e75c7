import Foundation
import Testing
import TetherCore
@testable import TetherOpenCode
import TetherStreaming

/// OpenCode 2.x turns recorded from `tether simulate opencode --generation 2` (`/api/event`,
/// one `data:` frame a line, under Transcripts/v2-*.jsonl), through the stream machine: the
/// mapping, and a disconnect after every frame resumed from the durable log.
@Suite struct OpenCode2TranscriptTests {
    static let names = ["v2-permission-turn", "v2-question-turn"]

    static func frames(_ name: String) throws -> [OpenCode2WireEvent] {
        try Transcript.frames(name).map { try OpenCode2WireDecoder.decode($0) }
    }

    static func events(_ actions: [OpenCode2StreamMachine.Action]) -> [Event] {
        actions.flatMap { action -> [Event] in if case .emit(let events) = action { events } else { [] } }
    }

    static func machine() -> OpenCode2StreamMachine {
        OpenCode2StreamMachine(request: EventsRequest(follow: true), configuration: .init(endpoint: "http://oc", promptSession: nil))
    }

    static func connected() throws -> OpenCode2WireEvent {
        try OpenCode2WireDecoder.decode(["id": "evt_0", "type": "server.connected", "data": [:]])
    }

    /// What an event means, without its time: what two readings of one turn must agree on.
    static func shape(_ event: Event) -> String {
        [event.type.rawValue, event.session ?? "", event.turn ?? "", event.part ?? "", event.cursor ?? "",
         JSONValue.object(event.data).serialized].joined(separator: " ")
    }

    @Test(arguments: names) func aRecordedTurnMapsToOneWholeTurn(_ name: String) throws {
        var machine = Self.machine()
        let events = try Self.events([try Self.connected()] .flatMap { machine.receive($0) })
            + Self.frames(name).flatMap { Self.events(machine.receive($0)) }
        #expect(events.of(.turnStarted).count == 1)
        #expect(events.of(.turnCompleted).count == 1)
        #expect(events.of(.turnCompleted).first?.data["status"] == "completed")
        #expect(events.of(.approvalRequested).count == 1)
        #expect(events.of(.approvalResolved).count == 1)
        // Every text part the agent streamed: its deltas add up to its completed text.
        let streamed = events.of(.partCompleted).filter { $0.data["kind"] == "text" && $0.data["role"] != "user" }
        #expect(!streamed.isEmpty)
        for part in streamed {
            #expect(events.assembledDeltas[part.part!] == part.data["text"]?.string)
        }
        // Durable frames carry their seq as the cursor, in order.
        let cursors = events.compactMap(\.cursor).compactMap { Int($0) }
        #expect(cursors == cursors.sorted())
        if name == "v2-question-turn" {
            #expect(events.of(.approvalRequested).first?.data["kind"] == "question")
        }
    }

    /// The link drops after frame `cut`, and the `missed` frames after it are sent while it is
    /// down. On reconnect the machine asks for each active session's log after its last seq; the
    /// log replays the durable frames sent so far from there (as the simulator's `?after=`
    /// does), and the global stream goes on with what is sent next. Every durable event arrives
    /// once, in order; the turn ends once; the deltas lost with the link are whole in the text.
    @Test(arguments: names) func aCutAfterEveryFrameResumesFromTheLogLosingNothing(_ name: String) throws {
        let frames = try Self.frames(name)
        var reference = Self.machine()
        _ = reference.receive(try Self.connected())
        let whole = frames.flatMap { Self.events(reference.receive($0)) }
        let durableWhole = whole.filter { $0.cursor != nil }.map(Self.shape)

        // From 1: the stream has seen a frame, so it knows the server's time to look for
        // sessions created while it was away. (Before any frame, a session that began is taken
        // from its running execution, as at the first connect.)
        for cut in 1...frames.count {
            for missed in [0, 1, 3, 8] {
                let resumed = min(frames.count, cut + missed)
                var machine = Self.machine()
                var events = Self.events(machine.receive(try Self.connected()))
                for frame in frames[..<cut] { events += Self.events(machine.receive(frame)) }
                // What the server has by the time the link is back: the log, and whether the
                // transcript's session runs (`GET /api/session/active`). The stream's I/O,
                // done as the machine asks.
                var sent = frames[..<resumed]
                func log(_ session: String, after: Int) -> [OpenCode2WireEvent] {
                    sent.filter { $0.isDurable && $0.session == session && ($0.seq ?? 0) > after }
                }
                func execute(_ actions: [OpenCode2StreamMachine.Action]) -> [Event] {
                    actions.flatMap { action -> [Event] in
                        switch action {
                        case .emit(let events):
                            return events
                        case .catchUp(let sessions):
                            return sessions.flatMap { execute(machine.caughtUp(session: $0.session, frames: log($0.session, after: $0.after), pending: [])) }
                        case .joinRunning:
                            let last = sent.last { $0.type.hasPrefix("session.execution.") }
                            let running = last?.type == "session.execution.started" ? [last!.session!] : []
                            // `GET /api/session`: sessions created since the time the machine gives.
                            let created = machine.createdWhileAway.map { since in
                                sent.filter { $0.type == "session.created" && ($0.created ?? 0) >= since }.compactMap(\.session)
                            } ?? []
                            return machine.sessionsToJoin(running: running, created: created).flatMap {
                                execute(machine.joined(session: $0.session, frames: log($0.session, after: $0.after), pending: []))
                            }
                        default:
                            return []
                        }
                    }
                }
                events += execute(machine.receive(try Self.connected()))
                for index in resumed..<frames.count {
                    sent = frames[...index]
                    events += execute(machine.receive(frames[index]))
                }

                let durable = events.filter { $0.cursor != nil }.map(Self.shape)
                #expect(durable == durableWhole, "cut after frame \(cut), \(missed) missed")
                #expect(events.of(.turnCompleted).count == 1, "cut after frame \(cut), \(missed) missed")
            }
        }
    }
}
