import Foundation
import Testing
import TetherCore
@testable import TetherOpenCode
import TetherStreaming

/// The OpenCode stream's rules without a socket: recorded frames and REST snapshots in, actions out.
@Suite struct OpenCodeStreamMachineTests {
    static let session = "ses_fe1d0c3a2b11Qm8xT2aLk9pQ1z"

    func machine(_ request: EventsRequest = EventsRequest(follow: true), directory: String? = nil,
                 prompt: Bool = false) -> OpenCodeStreamMachine {
        OpenCodeStreamMachine(request: request, configuration: .init(
            directory: directory, pollInterval: .seconds(10), endpoint: "http://oc", hasPrompt: prompt,
            promptSession: prompt ? Self.session : nil))
    }

    /// A REST snapshot recorded beside the transcripts (`Transcripts/NAME.json`).
    static func snapshot(_ name: String) throws -> OpenCodeSnapshot {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Transcripts"))
        let json = try JSONParser.parse(String(contentsOf: url, encoding: .utf8))
        let messages = (json["messages"]?.object ?? [:]).map { (session: $0.key, messages: $0.value.array ?? []) }
        return OpenCodeSnapshot(statuses: json["statuses"]?.object, messages: messages,
                                permissions: json["permissions"].flatMap { $0.isNull ? nil : $0 })
    }

    static func wire(_ frame: JSONValue) throws -> OpenCodeWireEvent { try OpenCodeWireEvent.decode(frame) }

    /// The frames of a transcript, decoded.
    static func frames(_ name: String) throws -> [OpenCodeWireEvent] { try Transcript.frames(name).map(wire) }

    /// Every `.emit` of `actions`, flattened.
    static func emitted(_ actions: [OpenCodeStreamMachine.Action]) -> [Event] {
        actions.flatMap { action -> [Event] in
            if case .emit(let events) = action { return events }
            return []
        }
    }

    @Test func connectingResyncsAndAResyncMidTurnEmitsTheTurnSoFar() throws {
        var machine = machine()
        let frames = try Self.frames("current-permission-turn")
        let connected = machine.receive(frames[0], at: 1_000)
        guard case .resync = try #require(connected.first) else { Issue.record("expected a resync, got \(connected)"); return }

        let snapshot = try Self.snapshot("snapshot-waiting-on-permission")
        #expect(machine.sessionsToRead(statuses: snapshot.statuses) == [Self.session])
        let actions = machine.resynced(snapshot, at: 2_000)
        let events = Self.emitted(actions)
        #expect(events.first?.type == .turnStarted && events.first?.turn == "msg_a001")
        #expect(events.filter { $0.type == .partCompleted }.compactMap(\.part) == ["prt_a001", "prt_a002", "prt_a003"])
        #expect(events.contains { $0.type == .partStarted && $0.part == "prt_a004" })
        let approval = try #require(events.first { $0.type == .approvalRequested })
        #expect(approval.data["id"]?.string == "\(Self.session)~per_b001")
        #expect(events.allSatisfy { $0.ts == 2_000 })  // stamped with the receive time, not read from a clock
        #expect(actions.contains { if case .noteGeneration(.v1, true) = $0 { true } else { false } })

        // The rest of the turn, live: nothing the resync emitted comes again.
        var live: [Event] = []
        for frame in frames[13...] { live += Self.emitted(machine.receive(frame, at: 3_000)) }
        #expect(!live.contains { $0.type == .approvalRequested || $0.type == .turnStarted })
        #expect(live.filter { $0.type == .partCompleted }.compactMap(\.part) == ["prt_a004", "prt_a005", "prt_a006"])
        #expect(live.filter { $0.type == .turnCompleted }.count == 1)
    }

    /// A question asked while the stream was away is found by the resync (`GET /question`),
    /// and one answered meanwhile is forgotten.
    @Test func aResyncAnnouncesQuestionsAskedWhileAwayAndForgetsAnsweredOnes() throws {
        var machine = machine()
        _ = machine.receive(try Self.frames("current-permission-turn")[0], at: 1_000)
        let question = try JSONParser.parse(#"{"id":"que_1","sessionID":"\#(Self.session)","questions":[{"question":"Which directory?","header":"Dir","options":[{"label":"build","description":"b"}]}]}"#)
        var snapshot = OpenCodeSnapshot(statuses: [:], messages: [], permissions: [], questions: [question])
        let asked = Self.emitted(machine.resynced(snapshot, at: 2_000)).filter { $0.type == .approvalRequested }
        #expect(asked.map { $0.data["id"]?.string } == ["\(Self.session)~que_1"])
        #expect(asked.first?.data["kind"] == "question")
        // Listed again: not announced twice.
        #expect(Self.emitted(machine.resynced(snapshot, at: 3_000)).isEmpty)
        // Gone from the list: answered while we were away; a later ask of the same id is new.
        snapshot.questions = []
        _ = machine.resynced(snapshot, at: 4_000)
        snapshot.questions = [question]
        #expect(Self.emitted(machine.resynced(snapshot, at: 5_000)).filter { $0.type == .approvalRequested }.count == 1)
    }

    @Test func theGenerationIsSaidOnceAndAgainWhenItChanges() throws {
        var machine = machine()
        var legacy = try Self.snapshot("snapshot-waiting-on-permission")
        legacy.permissions = nil
        let notes = { (actions: [OpenCodeStreamMachine.Action]) in
            actions.compactMap { action -> OpenCodeAPIGeneration? in
                if case .noteGeneration(let generation, _) = action { return generation }
                return nil
            }
        }
        #expect(notes(machine.resynced(legacy, at: 1)) == [.legacy])
        #expect(notes(machine.resynced(legacy, at: 2)).isEmpty)
        #expect(notes(machine.resynced(try Self.snapshot("snapshot-waiting-on-permission"), at: 3)) == [.v1])
    }

    @Test func sendFollowPostsAfterTheFirstResyncAndFinishesWithItsTurn() throws {
        var machine = machine(EventsRequest(session: Self.session, follow: true, untilTurnCompletes: true), prompt: true)
        let frames = try Self.frames("current-permission-turn")
        #expect(machine.sessionsToRead(statuses: [:]).isEmpty)
        let first = machine.resynced(OpenCodeSnapshot(statuses: [:], messages: [], permissions: .array([])), at: 1)
        guard case .postPrompt = try #require(first.last) else { Issue.record("expected postPrompt, got \(first)"); return }
        let posted = machine.postingPrompt(userMessages: [])
        #expect(posted)
        machine.promptPosted()
        // Posted: the session is read on every resync until its turn shows up.
        #expect(machine.sessionsToRead(statuses: [:]) == [Self.session])

        var events: [Event] = []
        var finished = false
        for frame in frames[1...] {
            let actions = machine.receive(frame, at: 2)
            events += Self.emitted(actions)
            if actions.contains(where: { if case .finish = $0 { true } else { false } }) { finished = true; break }
        }
        #expect(finished && machine.isDone)
        #expect(events.last?.type == .turnCompleted)
        #expect(events.allSatisfy { $0.turn == "msg_a001" || $0.type == .sessionStatus })
        // A second resync never posts again.
        let again = machine.resynced(OpenCodeSnapshot(statuses: [:], messages: [], permissions: .array([])), at: 3)
        #expect(!again.contains { if case .postPrompt = $0 { true } else { false } })
    }

    // MARK: A prompt POST that failed

    static func posts(_ actions: [OpenCodeStreamMachine.Action]) -> Int {
        actions.count { if case .postPrompt = $0 { true } else { false } }
    }

    /// `send --follow` whose prompt POST failed (connection refused, 5xx) and whose link was
    /// rebuilt: the session is read again and shows no new user message, so the prompt is posted
    /// again — once; a POST that then succeeds is never repeated. Before, the prompt counted as
    /// sent the moment it was posted and the command waited forever for a turn that never came.
    @Test func aPromptWhosePostFailedIsPostedAgainWhenTheServerDoesNotHaveIt() throws {
        var machine = machine(EventsRequest(session: Self.session, follow: true, untilTurnCompletes: true), prompt: true)
        // The recorded session, its turn (msg_a001) over: that turn was there before the prompt.
        var earlier = try Self.snapshot("snapshot-waiting-on-permission")
        earlier.statuses = [Self.session: ["type": "idle"]]
        let empty = OpenCodeSnapshot(statuses: [:], messages: [], permissions: .array([]))
        let resync1 = machine.resynced(empty, at: 1)
        #expect(Self.posts(resync1) == 1)
        // The POST fails.
        let posted1 = machine.postingPrompt(userMessages: ["msg_a001"])
        #expect(posted1)

        // Reconnected: the resync reads the session, which holds only the earlier turn.
        let connected = machine.receive(try Self.frames("current-permission-turn")[0], at: 2)
        guard case .resync = try #require(connected.first) else { Issue.record("expected a resync, got \(connected)"); return }
        #expect(machine.sessionsToRead(statuses: earlier.statuses) == [Self.session])
        let resynced = machine.resynced(earlier, at: 3)
        #expect(Self.posts(resynced) == 1)
        #expect(!Self.emitted(resynced).contains { $0.type == .turnStarted }, "the earlier turn is not ours")
        let posted2 = machine.postingPrompt(userMessages: ["msg_a001"])
        #expect(posted2)
        machine.promptPosted()

        // Posted: later resyncs never post again.
        let resync2 = machine.resynced(earlier, at: 4)
        #expect(Self.posts(resync2) == 0)
        let resync3 = machine.resynced(empty, at: 5)
        #expect(Self.posts(resync3) == 0)
    }

    /// The POST timed out after the server stored the prompt: the next resync finds a user
    /// message that was not there before. That is our turn — it is followed, and the prompt is
    /// not posted a second time.
    @Test func aPromptWhosePostFailedButArrivedIsNotPostedTwice() throws {
        var machine = machine(EventsRequest(session: Self.session, follow: true, untilTurnCompletes: true), prompt: true)
        let empty = OpenCodeSnapshot(statuses: [:], messages: [], permissions: .array([]))
        let resync1 = machine.resynced(empty, at: 1)
        #expect(Self.posts(resync1) == 1)
        let posted1 = machine.postingPrompt(userMessages: [])  // and the POST times out
        #expect(posted1)

        let resynced = machine.resynced(try Self.snapshot("snapshot-waiting-on-permission"), at: 2)
        #expect(Self.posts(resynced) == 0)
        let events = Self.emitted(resynced)
        #expect(events.first?.type == .turnStarted && events.first?.turn == "msg_a001")
        #expect(events.contains { $0.type == .approvalRequested })
        let resync2 = machine.resynced(empty, at: 3)
        #expect(Self.posts(resync2) == 0)
    }

    /// The prompt is stored between the resync's read (nothing new: post again) and the read
    /// just before the POST: that read shows it, and the prompt is not posted twice.
    @Test func aPromptStoredJustBeforeTheRepostIsNotPostedTwice() throws {
        var machine = machine(EventsRequest(session: Self.session, follow: true, untilTurnCompletes: true), prompt: true)
        let empty = OpenCodeSnapshot(statuses: [:], messages: [(Self.session, [])], permissions: .array([]))
        let resync1 = machine.resynced(empty, at: 1)
        #expect(Self.posts(resync1) == 1)
        let posted1 = machine.postingPrompt(userMessages: [])  // and the POST fails
        #expect(posted1)

        let resync2 = machine.resynced(empty, at: 2)
        #expect(Self.posts(resync2) == 1)
        let posted2 = machine.postingPrompt(userMessages: ["msg_a001"])
        #expect(!posted2)
        // The turn comes live, and is ours; no resync posts again.
        let resync3 = machine.resynced(empty, at: 3)
        #expect(Self.posts(resync3) == 0)
        var events: [Event] = []
        for frame in try Self.frames("current-permission-turn")[1...] { events += Self.emitted(machine.receive(frame, at: 4)) }
        #expect(events.first?.type == .turnStarted && events.first?.turn == "msg_a001")
        #expect(machine.isDone)
    }

    @Test func heartbeatsWhileBusyAndSilentPollAfterTheInterval() throws {
        var machine = machine()
        let frames = try Self.frames("current-permission-turn")
        for frame in frames[1...3] { _ = machine.receive(frame, at: 1_000) }  // the turn is open and busy
        let heartbeat = try Self.wire(["payload": ["type": "server.heartbeat", "properties": [:]]])
        #expect(machine.receive(heartbeat, at: 5_000).isEmpty)
        let poll = machine.receive(heartbeat, at: 11_000)
        #expect(poll.count == 2)
        guard case .resync = try #require(poll.last) else { Issue.record("expected a resync"); return }
        // The poll counts as activity: the next heartbeat right after it does not poll again.
        #expect(machine.receive(heartbeat, at: 12_000).isEmpty)
    }

    @Test func anIdleSessionWithOpenPartsIsReconciledFromRESTFirst() throws {
        var machine = machine()
        let frames = try Self.frames("current-permission-turn")
        for frame in frames[1...8] { _ = machine.receive(frame, at: 1) }  // prt_a003 streaming, not final
        let idle = try Self.wire(["directory": "/home/dev/demo",
                                  "payload": ["type": "session.idle", "properties": ["sessionID": .string(Self.session)]]])
        let actions = machine.receive(idle, at: 2)
        guard case .reconcile(let session, _) = try #require(actions.first) else { Issue.record("expected reconcile"); return }
        #expect(session == Self.session)
        let snapshot = try Self.snapshot("snapshot-waiting-on-permission")
        let events = Self.emitted(machine.reconciled(session: session, messages: snapshot.messages[0].messages, then: idle, at: 3))
        let text = try #require(events.first { $0.type == .partCompleted && $0.part == "prt_a003" })
        #expect(text.data["text"] == "I'll remove the build directory.")
        #expect(events.last?.type == .turnCompleted)
    }

    /// A bound reached — parts open past the limit, text past a part's limit — is said once
    /// on stderr, whichever comes first, and never again in the run.
    @Test(arguments: [true, false]) func aBoundReachedIsSaidOnce(byParts: Bool) {
        var machine = machine()
        func delta(_ part: String, _ text: String) -> OpenCodeWireEvent {
            OpenCodeWireEvent(type: "message.part.delta", properties: ["sessionID": "s", "messageID": "m", "partID": .string(part),
                                                                          "field": "text", "delta": .string(text)], directory: nil, raw: nil)
        }
        var notes: [String] = []
        func feed(_ wire: OpenCodeWireEvent) {
            for case .noteBoundReached(let note) in machine.receive(wire, at: 1) { notes.append(note) }
        }
        if byParts {
            for index in 0...OpenCodeEventMapper.openPartLimit { feed(delta("p\(index)", "x")) }
        } else {
            feed(delta("p", String(repeating: "a", count: OpenCodeEventMapper.partTextLimit)))
            feed(delta("p", "more"))
        }
        #expect(notes.count == 1)
        #expect(notes.first?.contains("1 MiB of text a part") == true)
        for index in 0..<3 { feed(delta("q\(index)", String(repeating: "b", count: OpenCodeEventMapper.partTextLimit + 1))) }
        #expect(notes.count == 1)
    }

    @Test func framesOfAnotherProjectAreDropped() throws {
        var machine = machine(directory: "/home/dev/demo")
        let frames = try Self.frames("current-permission-turn")
        #expect(Self.emitted(machine.receive(frames[26], at: 1)).isEmpty)  // /elsewhere
        #expect(!Self.emitted(machine.receive(frames[3], at: 1)).isEmpty)  // session.status busy here
    }

    /// A loop that gathers part frames' events (`receivePart`) sees what one that takes every
    /// frame through `receive` sees: the same events in the same order, with the same times and
    /// data, for another project's frames, another session's, and a turn's end.
    @Test(arguments: [nil, "/elsewhere"], [EventsRequest(follow: true), EventsRequest(turn: "msg_a001", follow: true)])
    func partFramesGatheredAreWhatReceiveEmits(directory: String?, request: EventsRequest) throws {
        // As the stream decodes them: part frames read straight from their bytes, without `raw`.
        let frames = try Transcript.frames("current-permission-turn").map { frame in
            try OpenCodeWireEvent.decode(Array(frame.serialized.utf8), keepingRaw: false)
        }
        #expect(frames.contains { !$0.isParsed })
        var taking = machine(request, directory: directory), gathering = machine(request, directory: directory)
        var taken: [Event] = [], gathered: [Event] = []
        var partFrames = 0
        for (index, wire) in frames.enumerated() {
            let time = Double(1_000 + index)
            taken += Self.emitted(taking.receive(wire, at: time))
            if let followUps = gathering.receivePart(wire, at: time, into: &gathered) {
                partFrames += 1
                #expect(Self.emitted(followUps).isEmpty)
            } else {
                gathered += Self.emitted(gathering.receive(wire, at: time))
            }
        }
        #expect(partFrames > 0)
        #expect(taken.contains { $0.type == .partDelta } == (directory == nil))
        var codec = EventCodec(includeRaw: true)
        #expect(gathered.map { codec.encode($0) } == taken.map { codec.encode($0) })
    }
}
