import Foundation
import Logging
import Testing
import TetherCore
@testable import TetherGateway

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

    @Test func onceOnlyTypesAreAppendedOnceAndOthersEveryTime() throws {
        let log = try Self.open(Self.temporaryPath())
        #expect(try log.append(Self.part(.partCompleted, part: "p1")) != nil)
        // A resubscription re-reads the same part: not appended again, even with other content.
        #expect(try log.append(Self.part(.partCompleted, part: "p1", text: "hi again")) == nil)
        #expect(try log.append(Self.part(.partCompleted, part: "p2")) != nil)
        // The same part in another profile is another event.
        #expect(try log.append(Self.part(.partCompleted, part: "p1", profile: "work")) != nil)
        // Deltas are live-only and never deduplicated.
        #expect(try log.append(Self.part(.partDelta, part: "p3")) != nil)
        #expect(try log.append(Self.part(.partDelta, part: "p3")) != nil)

        let approval = Approval(id: "a1", session: "s1", kind: .command, command: "rm -rf build", options: [.accept], risk: .high)
        #expect(try log.append(Self.stamped(.approvalRequested(approval))) != nil)
        #expect(try log.append(Self.stamped(.approvalRequested(approval))) == nil)
        let resolved = Self.stamped(.approvalResolved(id: "a1", session: "s1", turn: nil, decision: "accept"))
        #expect(try log.append(resolved) != nil)
        #expect(try log.append(resolved) == nil)
        let done = Self.stamped(.turnCompleted(session: "s1", turn: "t1", outcome: .completed))
        #expect(try log.append(done) != nil)
        #expect(try log.append(done) == nil)
        let created = Self.stamped(.session(.sessionCreated, Session(id: "s1")))
        #expect(try log.append(created) != nil)
        #expect(try log.append(created) == nil)

        let all = try log.events(after: 0)
        #expect(all.map(\.seq) == Array(1...Int64(all.count)))
        #expect(all.count == 9)
    }

    /// A stream's batch is one transaction: seqs in order, the duplicate rule applied inside the
    /// batch and against what was logged before, the same rows as appending one by one.
    @Test func aBatchIsAppendedInOrderWithTheDuplicateRule() throws {
        let log = try Self.open(Self.temporaryPath())
        #expect(try log.append(Self.part(.partCompleted, part: "p0")) != nil)
        let batch = [Self.part(.partDelta, part: "p1"), Self.part(.partCompleted, part: "p1"), Self.part(.partCompleted, part: "p0"),
                     Self.part(.partCompleted, part: "p1", text: "again"), Self.part(.partDelta, part: "p1")]
        let logged = try log.append(batch)
        #expect(logged.map { $0 == nil } == [false, false, true, true, false])
        #expect(logged.compactMap { $0?.seq } == [2, 3, 4])
        #expect(try log.events(after: 0).map(\.type) == ["part.completed", "part.delta", "part.completed", "part.delta"])
        #expect(try log.append([]).isEmpty)
    }

    @Test func theStoredFormIsTheSchemaV1Line() throws {
        let log = try Self.open(Self.temporaryPath())
        let event = Self.part(.partCompleted, part: "p1", text: "line one\nline two")
        let logged = try #require(try log.append(event))
        #expect(!logged.line.contains("\n"))
        let decoded = try EventCodec.decode(logged.line)
        #expect(decoded.type == .partCompleted && decoded.profile == "home" && decoded.backend == .openCode)
        #expect(decoded.data["text"] == "line one\nline two")
        #expect(logged.jsonWithSeq.hasPrefix("{\"seq\":\(logged.seq),\"v\":1,"))
        #expect(try JSONParser.parse(logged.jsonWithSeq)["seq"]?.int == logged.seq)
    }

    @Test func seqKeepsGrowingAcrossReopenAndAfterEverythingWasTrimmed() throws {
        let path = Self.temporaryPath()
        var lastSeq: Int64 = 0
        do {
            let log = try Self.open(path)
            for index in 0..<5 { _ = try log.append(Self.part(.partDelta, part: "p\(index)")) }
            lastSeq = try log.lastSeq()
            #expect(lastSeq == 5)
            #expect(try log.trim(olderThan: Event.now() + 1000) == 5)
            #expect(try log.events(after: 0).isEmpty)
        }
        let reopened = try Self.open(path)
        #expect(try reopened.lastSeq() == lastSeq)
        #expect(try reopened.trimmedThrough() == 5)
        let next = try #require(try reopened.append(Self.part(.partDelta, part: "again")))
        #expect(next.seq == lastSeq + 1)
        // The duplicate rule survives a reopen too.
        _ = try reopened.append(Self.part(.partCompleted, part: "done"))
        let again = try Self.open(path)
        #expect(try again.append(Self.part(.partCompleted, part: "done")) == nil)
    }

    @Test func retentionTrimsOnlyOldEventsAndRemembersHowFar() throws {
        let log = try Self.open(Self.temporaryPath())
        let now = Event.now()
        for (index, age) in [3.0, 2.0, 0.5].enumerated() {
            var event = Self.part(.partDelta, part: "p\(index)")
            event.ts = now - age * 86_400_000
            _ = try log.append(event)
        }
        #expect(try log.trim(olderThan: now - 1 * 86_400_000) == 2)
        #expect(try log.trimmedThrough() == 2)
        #expect(try log.events(after: 0).map(\.seq) == [3])
        #expect(try log.trim(olderThan: now - 1 * 86_400_000) == 0)
        #expect(try log.trimmedThrough() == 2)
    }

    /// A resubscription reads a session's recent turns back from history, some older than
    /// retention keeps: the duplicate rule outlives the events it trimmed, so they are not
    /// logged (and sent to every client) again.
    @Test func theDuplicateRuleOutlivesRetention() throws {
        let path = Self.temporaryPath()
        let log = try Self.open(path)
        var old = Self.part(.partCompleted, part: "old")
        old.ts = Event.now() - 3 * 86_400_000
        #expect(try log.append(old) != nil)
        #expect(try log.append(Self.part(.partDelta, part: "live")) != nil)
        #expect(try log.trim(olderThan: Event.now() - 86_400_000) == 1)
        #expect(try log.append(Self.part(.partCompleted, part: "old")) == nil)
        #expect(try Self.open(path).append(Self.part(.partCompleted, part: "old")) == nil)
        #expect(try log.append(Self.part(.partCompleted, part: "new")) != nil)
    }

    /// The retired keys are bounded: past the limit the oldest go, and an event that old is
    /// logged again if history brings it back (the newest are still refused).
    @Test func retiredDedupKeysAreCapped() throws {
        let log = try EventLog(path: Self.temporaryPath(), logger: Logger(label: "test"), retiredDedupLimit: 3)
        let parts = (1...5).map { "p\($0)" }
        for part in parts {
            var event = Self.part(.partCompleted, part: part)
            event.ts = Event.now() - 3 * 86_400_000
            #expect(try log.append(event) != nil)
        }
        #expect(try log.trim(olderThan: Event.now() - 86_400_000) == 5)
        #expect(try parts.map { try log.append(Self.part(.partCompleted, part: $0)) != nil } == [true, true, false, false, false])
    }

    @Test func theFirstAnswerToAnApprovalIsKept() throws {
        let path = Self.temporaryPath()
        let log = try Self.open(path)
        #expect(try log.decision(profile: "home", approval: "a1") == nil)
        let first = try log.recordDecision(profile: "home", approval: "a1", decision: "accept", line: "{\"first\":1}")
        #expect(first.decision == "accept")
        let second = try log.recordDecision(profile: "home", approval: "a1", decision: "decline", line: "{}")
        #expect(second == first)
        #expect(try Self.open(path).decision(profile: "home", approval: "a1")?.decision == "accept")
        #expect(try log.decision(profile: "work", approval: "a1") == nil)

        // Answered elsewhere: the backend's approval.resolved in the log counts as the answer.
        _ = try log.append(Self.stamped(.approvalResolved(id: "a2", session: "s1", turn: nil, decision: "decline")))
        #expect(try log.decision(profile: "home", approval: "a2")?.decision == "decline")
    }

    @Test func readsFilterByProfileSessionAndTypeFamily() throws {
        let log = try Self.open(Self.temporaryPath())
        _ = try log.append(Self.part(.partDelta, part: "p1"))
        _ = try log.append(Self.part(.partCompleted, part: "p1", profile: "work"))
        _ = try log.append(Self.stamped(.approvalRequested(Approval(id: "a1", session: "s2", kind: .command, options: [.accept], risk: .low))))
        #expect(try log.events(after: 0, matching: EventQuery(profiles: ["work"])).map(\.seq) == [2])
        #expect(try log.events(after: 0, matching: EventQuery(types: ["approval."])).map(\.seq) == [3])
        #expect(try log.events(after: 0, matching: EventQuery(types: ["part"])).map(\.seq) == [1, 2])
        #expect(try log.events(after: 0, matching: EventQuery(types: ["part.delta"])).map(\.seq) == [1])
        #expect(try log.events(after: 0, matching: EventQuery(session: "s2")).map(\.seq) == [3])
        #expect(try log.events(after: 1, limit: 1).map(\.seq) == [2])
    }

    /// Pages of a replay: without a filter exactly the rows asked for, in order, to the end; with
    /// one, matches gathered across the log's internal reads (1,000 rows each) up to the limit.
    @Test func pagesReadOnToTheLimitOrTheEnd() throws {
        let log = try Self.open(Self.temporaryPath())
        for index in 1...2_500 {
            _ = try log.append(Self.part(.partDelta, part: "p\(index)", profile: index.isMultiple(of: 2) ? "b" : "a"))
        }
        #expect(try log.page(after: 0, limit: 700).events.map(\.seq) == Array(1...700))
        #expect(try log.page(after: 700, limit: 700).events.map(\.seq) == Array(701...1400))
        #expect(try log.page(after: 2_000, limit: 700).events.map(\.seq) == Array(2_001...2_500))
        #expect(try log.page(after: 2_500, limit: 700).events.isEmpty)
        let evens = try log.page(after: 0, matching: EventQuery(profiles: ["b"]), limit: 1_200).events
        #expect(evens.map(\.seq) == Array(stride(from: 2, through: 2_400, by: 2)))
        #expect(evens.allSatisfy { $0.profile == "b" && $0.type == "part.delta" && $0.session == "s1" })
        let rest = try log.page(after: 2_400, matching: EventQuery(profiles: ["b"]), limit: 1_200).events
        #expect(rest.map(\.seq) == Array(stride(from: 2_402, through: 2_500, by: 2)))
    }
}
