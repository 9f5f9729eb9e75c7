import Foundation
import Logging
import Testing
import TetherCore
@testable import TetherGateway
import TetherStreaming

/// The durable log: the duplicate rule, seq across reopen, retention, answered approvals.
@Suite struct EventLogTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tether-log-\(UUID().uuidString)/gateway.sqlite").path
    }

    static func open(_ path: String) throws -> EventLog {
        try EventLog(path: path, logger: Logger(label: "test"))
    }

    static func stamped(_ event: Event, profile: String = "home") -> Event {
        var event = event
        event.profile = profile
        event.backend = .openCode
        return event
    }

    static func part(_ type: EventType, part: String, text: String = "hi", profile: String = "home") -> Event {
        stamped(.part(type, session: "s1", turn: "t1", part: part, kind: .text, content: ["text": .string(text)]), profile: profile)
    }

    @Test(arguments: StoreKind.allCases) func onceOnlyTypesAreAppendedOnceAndOthersEveryTime(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        #expect(try await log.append(Self.part(.partCompleted, part: "p1")) != nil)
        // A resubscription re-reads the same part: not appended again, even with other content.
        #expect(try await log.append(Self.part(.partCompleted, part: "p1", text: "hi again")) == nil)
        #expect(try await log.append(Self.part(.partCompleted, part: "p2")) != nil)
        // The same part in another profile is another event.
        #expect(try await log.append(Self.part(.partCompleted, part: "p1", profile: "work")) != nil)
        // Deltas are live-only and never deduplicated.
        #expect(try await log.append(Self.part(.partDelta, part: "p3")) != nil)
        #expect(try await log.append(Self.part(.partDelta, part: "p3")) != nil)

        let approval = Approval(id: "a1", session: "s1", kind: .command, command: "rm -rf build", options: [.accept], risk: .high)
        #expect(try await log.append(Self.stamped(.approvalRequested(approval))) != nil)
        #expect(try await log.append(Self.stamped(.approvalRequested(approval))) == nil)
        let resolved = Self.stamped(.approvalResolved(id: "a1", session: "s1", turn: nil, decision: "accept"))
        #expect(try await log.append(resolved) != nil)
        #expect(try await log.append(resolved) == nil)
        let done = Self.stamped(.turnCompleted(session: "s1", turn: "t1", outcome: .completed))
        #expect(try await log.append(done) != nil)
        #expect(try await log.append(done) == nil)
        let created = Self.stamped(.session(.sessionCreated, Session(id: "s1")))
        #expect(try await log.append(created) != nil)
        #expect(try await log.append(created) == nil)

        let all = try await log.events(after: 0)
        #expect(all.map(\.seq) == Array(1...Int64(all.count)))
        #expect(all.count == 9)
    }

    /// A stream's batch is one transaction: seqs in order, the duplicate rule applied inside the
    /// batch and against what was logged before, the same rows as appending one by one.
    @Test(arguments: StoreKind.allCases) func aBatchIsAppendedInOrderWithTheDuplicateRule(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        #expect(try await log.append(Self.part(.partCompleted, part: "p0")) != nil)
        let batch = [Self.part(.partDelta, part: "p1"), Self.part(.partCompleted, part: "p1"), Self.part(.partCompleted, part: "p0"),
                     Self.part(.partCompleted, part: "p1", text: "again"), Self.part(.partDelta, part: "p1")]
        let logged = try await log.append(batch)
        #expect(logged.map { $0 == nil } == [false, false, true, true, false])
        #expect(logged.compactMap { $0?.seq } == [2, 3, 4])
        #expect(try await log.events(after: 0).map(\.type) == ["part.completed", "part.delta", "part.completed", "part.delta"])
        #expect(try await log.append([]).isEmpty)
    }

    /// A batch longer than one INSERT takes (128 rows, then 64, 32, … for the rest): every kept
    /// row gets the next seq in batch order and is stored as it was given, whatever its place.
    @Test(arguments: StoreKind.allCases) func aLongBatchKeepsItsOrderAcrossInsertChunks(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        #expect(try await log.append(Self.part(.partCompleted, part: "before")) != nil)
        var batch: [Event] = []
        for index in 0..<301 {
            switch index % 7 {
            case 3: batch.append(Self.part(.partCompleted, part: "before"))  // logged before: dropped
            case 5: batch.append(Self.part(.partCompleted, part: "p\(index % 3)"))  // a repeat after its first: dropped
            default:
                var event = Self.part(.partDelta, part: "d\(index)", text: "text \(index) \u{0}é\n")
                if index % 11 == 0 { event.session = nil }
                batch.append(event)
            }
        }
        let logged = try await log.append(batch)
        let firstOfEachPart = Set((0..<301).filter { $0 % 7 == 5 }.prefix(3))
        let kept = (0..<301).filter { $0 % 7 != 3 && ($0 % 7 != 5 || firstOfEachPart.contains($0)) }
        #expect(logged.indices.filter { logged[$0] != nil } == kept)
        #expect(logged.compactMap { $0?.seq } == Array(2...Int64(kept.count + 1)))
        let stored = try await log.events(after: 1, limit: 1000)
        #expect(stored == logged.compactMap { $0 })
        for (index, event) in zip(kept, stored) {
            let decoded = try EventCodec.decode(event.line)
            #expect(decoded.part == batch[index].part && decoded.session == batch[index].session && event.session == batch[index].session)
            #expect(decoded.data == batch[index].data)
        }
    }

    @Test(arguments: StoreKind.allCases) func theStoredFormIsTheSchemaV1Line(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        let event = Self.part(.partCompleted, part: "p1", text: "line one\nline two")
        let logged = try #require(try await log.append(event))
        #expect(!logged.line.contains("\n"))
        let decoded = try EventCodec.decode(logged.line)
        #expect(decoded.type == .partCompleted && decoded.profile == "home" && decoded.backend == .openCode)
        #expect(decoded.data["text"] == "line one\nline two")
        #expect(logged.jsonWithSeq.hasPrefix("{\"seq\":\(logged.seq),\"v\":1,"))
        #expect(try JSONParser.parse(logged.jsonWithSeq)["seq"]?.int == logged.seq)
    }

    @Test(arguments: StoreKind.allCases) func seqKeepsGrowingAcrossReopenAndAfterEverythingWasTrimmed(_ kind: StoreKind) async throws {
        let place = try StorePlace.fresh(kind)
        var lastSeq: Int64 = 0
        do {
            let log = try await place.open()
            for index in 0..<5 { _ = try await log.append(Self.part(.partDelta, part: "p\(index)")) }
            lastSeq = try await log.lastSeq()
            #expect(lastSeq == 5)
            #expect(try await log.trim(olderThan: Event.now() + 1000) == 5)
            #expect(try await log.events(after: 0).isEmpty)
        }
        let reopened = try await place.open()
        #expect(try await reopened.lastSeq() == lastSeq)
        #expect(try await reopened.trimmedThrough() == 5)
        let next = try #require(try await reopened.append(Self.part(.partDelta, part: "again")))
        #expect(next.seq == lastSeq + 1)
        // The duplicate rule survives a reopen too.
        _ = try await reopened.append(Self.part(.partCompleted, part: "done"))
        let again = try await place.open()
        #expect(try await again.append(Self.part(.partCompleted, part: "done")) == nil)
    }

    @Test(arguments: StoreKind.allCases) func retentionTrimsOnlyOldEventsAndRemembersHowFar(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        let now = Event.now()
        for (index, age) in [3.0, 2.0, 0.5].enumerated() {
            var event = Self.part(.partDelta, part: "p\(index)")
            event.ts = now - age * 86_400_000
            _ = try await log.append(event)
        }
        #expect(try await log.trim(olderThan: now - 1 * 86_400_000) == 2)
        #expect(try await log.trimmedThrough() == 2)
        #expect(try await log.events(after: 0).map(\.seq) == [3])
        #expect(try await log.trim(olderThan: now - 1 * 86_400_000) == 0)
        #expect(try await log.trimmedThrough() == 2)
    }

    /// A resubscription reads a session's recent turns back from history, some older than
    /// retention keeps: the duplicate rule outlives the events it trimmed, so they are not
    /// logged (and sent to every client) again.
    @Test(arguments: StoreKind.allCases) func theDuplicateRuleOutlivesRetention(_ kind: StoreKind) async throws {
        let place = try StorePlace.fresh(kind)
        let log = try await place.open()
        var old = Self.part(.partCompleted, part: "old")
        old.ts = Event.now() - 3 * 86_400_000
        #expect(try await log.append(old) != nil)
        #expect(try await log.append(Self.part(.partDelta, part: "live")) != nil)
        #expect(try await log.trim(olderThan: Event.now() - 86_400_000) == 1)
        #expect(try await log.append(Self.part(.partCompleted, part: "old")) == nil)
        #expect(try await place.open().append(Self.part(.partCompleted, part: "old")) == nil)
        #expect(try await log.append(Self.part(.partCompleted, part: "new")) != nil)
    }

    /// The retired keys are bounded: past the limit the oldest go, and an event that old is
    /// logged again if history brings it back (the newest are still refused).
    @Test(arguments: StoreKind.allCases) func retiredDedupKeysAreCapped(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open(retiredDedupLimit: 3)
        let parts = (1...5).map { "p\($0)" }
        for part in parts {
            var event = Self.part(.partCompleted, part: part)
            event.ts = Event.now() - 3 * 86_400_000
            #expect(try await log.append(event) != nil)
        }
        #expect(try await log.trim(olderThan: Event.now() - 86_400_000) == 5)
        var appended: [Bool] = []
        for part in parts { appended.append(try await log.append(Self.part(.partCompleted, part: part)) != nil) }
        #expect(appended == [true, true, false, false, false])
    }

    @Test(arguments: StoreKind.allCases) func theFirstAnswerToAnApprovalIsKept(_ kind: StoreKind) async throws {
        let place = try StorePlace.fresh(kind)
        let log = try await place.open()
        #expect(try await log.decision(profile: "home", approval: "a1") == nil)
        let first = try await log.recordDecision(profile: "home", approval: "a1", decision: "accept", line: "{\"first\":1}")
        #expect(first.decision == "accept")
        let second = try await log.recordDecision(profile: "home", approval: "a1", decision: "decline", line: "{}")
        #expect(second == first)
        #expect(try await place.open().decision(profile: "home", approval: "a1")?.decision == "accept")
        #expect(try await log.decision(profile: "work", approval: "a1") == nil)

        // Answered elsewhere: the backend's approval.resolved in the log counts as the answer.
        _ = try await log.append(Self.stamped(.approvalResolved(id: "a2", session: "s1", turn: nil, decision: "decline")))
        #expect(try await log.decision(profile: "home", approval: "a2")?.decision == "decline")
    }

    @Test(arguments: StoreKind.allCases) func readsFilterByProfileSessionAndTypeFamily(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        _ = try await log.append(Self.part(.partDelta, part: "p1"))
        _ = try await log.append(Self.part(.partCompleted, part: "p1", profile: "work"))
        _ = try await log.append(Self.stamped(.approvalRequested(Approval(id: "a1", session: "s2", kind: .command, options: [.accept], risk: .low))))
        #expect(try await log.events(after: 0, matching: EventQuery(profiles: ["work"])).map(\.seq) == [2])
        #expect(try await log.events(after: 0, matching: EventQuery(types: ["approval."])).map(\.seq) == [3])
        #expect(try await log.events(after: 0, matching: EventQuery(types: ["part"])).map(\.seq) == [1, 2])
        #expect(try await log.events(after: 0, matching: EventQuery(types: ["part.delta"])).map(\.seq) == [1])
        #expect(try await log.events(after: 0, matching: EventQuery(session: "s2")).map(\.seq) == [3])
        #expect(try await log.events(after: 1, limit: 1).map(\.seq) == [2])
    }

    /// Pages of a replay: without a filter exactly the rows asked for, in order, to the end; with
    /// one, matches gathered across the log's internal reads (1,000 rows each) up to the limit.
    @Test(arguments: StoreKind.allCases) func pagesReadOnToTheLimitOrTheEnd(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        for index in 1...2_500 {
            _ = try await log.append(Self.part(.partDelta, part: "p\(index)", profile: index.isMultiple(of: 2) ? "b" : "a"))
        }
        #expect(try await log.page(after: 0, limit: 700).events.map(\.seq) == Array(1...700))
        #expect(try await log.page(after: 700, limit: 700).events.map(\.seq) == Array(701...1400))
        #expect(try await log.page(after: 2_000, limit: 700).events.map(\.seq) == Array(2_001...2_500))
        #expect(try await log.page(after: 2_500, limit: 700).events.isEmpty)
        let evens = try await log.page(after: 0, matching: EventQuery(profiles: ["b"]), limit: 1_200).events
        #expect(evens.map(\.seq) == Array(stride(from: 2, through: 2_400, by: 2)))
        #expect(evens.allSatisfy { $0.profile == "b" && $0.type == "part.delta" && $0.session == "s1" })
        let rest = try await log.page(after: 2_400, matching: EventQuery(profiles: ["b"]), limit: 1_200).events
        #expect(rest.map(\.seq) == Array(stride(from: 2_402, through: 2_500, by: 2)))
    }
}
