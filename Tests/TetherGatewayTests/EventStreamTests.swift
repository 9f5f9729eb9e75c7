import Foundation
import Logging
import Synchronization
import GRDB
import NIOCore
import NIOPosix
import Testing
import TetherCore
@testable import TetherGateway

/// SSE framing, cursors, filters, and replay-then-live without a seam.
@Suite struct EventStreamTests {
    static func journal() throws -> EventJournal {
        EventJournal(log: try EventLogTests.open(EventLogTests.temporaryPath()), broadcast: EventBroadcast())
    }

    /// A journal over a fresh log of `kind`, and where that log lives.
    static func journal(_ kind: StoreKind) async throws -> (EventJournal, StorePlace) {
        let place = try StorePlace.fresh(kind)
        return (EventJournal(log: try await place.open(), broadcast: EventBroadcast()), place)
    }

    static func delta(_ part: String, session: String = "s1") -> Event {
        EventLogTests.stamped(.part(.partDelta, session: session, turn: "t1", part: part, kind: .text, content: ["delta": "x"]))
    }

    @Test func framesAreWhatAnEventSourceParses() {
        let event = LoggedEvent(seq: 42, type: "part.delta", profile: "home", session: "s1", line: "{\"v\":1}")
        #expect(SSEFrame.event(event) == "id: 42\ndata: {\"v\":1}\n\n")
        #expect(SSEFrame.cursor(7) == "id: 7\n\n")
        #expect(SSEFrame.heartbeat.hasPrefix(":") && SSEFrame.heartbeat.hasSuffix("\n\n"))
    }

    @Test func lastEventIDWinsOverSinceAndGarbageIsABadRequest() throws {
        #expect(try EventStreamCursor.parse(lastEventID: nil, since: nil) == .now)
        #expect(try EventStreamCursor.parse(lastEventID: nil, since: "5") == .after(5))
        #expect(try EventStreamCursor.parse(lastEventID: "9", since: "5") == .after(9))
        #expect(try EventStreamCursor.parse(lastEventID: "", since: "5") == .after(5))
        #expect(throws: ProblemDetails.self) { try EventStreamCursor.parse(lastEventID: "abc", since: nil) }
        #expect(throws: ProblemDetails.self) { try EventStreamCursor.parse(lastEventID: nil, since: "-1") }
    }

    @Test func typeFiltersMatchWholeFamiliesOnly() {
        #expect(EventQuery.type("approval.requested", matches: "approval."))
        #expect(EventQuery.type("approval.requested", matches: "approval"))
        #expect(!EventQuery.type("approvals.x", matches: "approval"))
        #expect(EventQuery.type("error", matches: "error"))
        #expect(!EventQuery.type("part.delta", matches: "part.completed"))
    }

    /// Collects what a streamer writes: the replay through its `write`, the live events as its
    /// connection (written from an event loop).
    final class Collector: LiveFrameSink {
        let frames = Mutex<[String]>([])
        let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let writable = Mutex(true)
        var isWritable: Bool { writable.withLock { $0 } }
        func write(_ frames: [ByteBuffer]) { add(frames) }
        func whenClosed(_ action: @escaping @Sendable () -> Void) {}
        func add(_ buffers: [ByteBuffer]) { frames.withLock { $0.append(buffers.map { String(buffer: $0) }.joined()) } }
        /// The ids of the events written (a write may hold several: the replay writes pages).
        var ids: [Int64] {
            frames.withLock { $0 }.joined().components(separatedBy: "\n\n").compactMap { block in
                guard block.contains("data: ") else { return nil }
                return block.split(separator: "\n").first { $0.hasPrefix("id: ") }.flatMap { Int64($0.dropFirst(4)) }
            }
        }
    }

    @Test(arguments: StoreKind.allCases) func replayThenLiveHasNoSeam(_ kind: StoreKind) async throws {
        let (journal, _) = try await Self.journal(kind)
        for index in 0..<3 { try await journal.record(Self.delta("p\(index)")) }
        let subscription = journal.broadcast.subscribe()
        // Appended after the subscription and before the replay is read: in both, sent once.
        try await journal.record(Self.delta("p3"))
        let collector = Collector()
        let streamer = EventStreamer(journal: journal, filter: EventQuery(), cursor: .after(1))
        let task = Task { try await streamer.stream(subscription, live: collector) { collector.add($0) } }
        try await waitUntil { collector.ids.count >= 3 }
        for index in 4..<8 { try await journal.record(Self.delta("p\(index)")) }
        try await waitUntil { collector.ids.count >= 7 }
        journal.broadcast.closeAll()
        try await task.value
        #expect(collector.ids == [2, 3, 4, 5, 6, 7, 8])
    }

    @Test(arguments: StoreKind.allCases) func withoutACursorTheStreamStartsWithTheCurrentEndAndThenOnlyLiveEvents(_ kind: StoreKind) async throws {
        let (journal, _) = try await Self.journal(kind)
        for index in 0..<3 { try await journal.record(Self.delta("p\(index)")) }
        let collector = Collector()
        let streamer = EventStreamer(journal: journal, filter: EventQuery(session: "s2"), cursor: .now)
        let subscription = streamer.subscribe()
        let task = Task { try await streamer.stream(subscription, live: collector) { collector.add($0) } }
        try await waitUntil { !collector.frames.withLock { $0 }.isEmpty }
        try await journal.record(Self.delta("other", session: "s1"))
        try await journal.record(Self.delta("mine", session: "s2"))
        try await waitUntil { collector.ids.count >= 1 }
        journal.broadcast.closeAll()
        try await task.value
        #expect(collector.frames.withLock { $0 }.first == "id: 3\n\n")
        #expect(collector.ids == [5])
    }

    @Test(arguments: StoreKind.allCases) func aCursorBeforeRetentionGetsCursorExpiredThenTheRest(_ kind: StoreKind) async throws {
        let (journal, place) = try await Self.journal(kind)
        for index in 0..<5 { try await journal.record(Self.delta("p\(index)")) }
        // Trim seq 1...3.
        try await place.backdate(through: 3, in: journal.log)
        try await journal.log.trim(olderThan: 1)
        let collector = Collector()
        let subscription = journal.broadcast.subscribe()
        let task = Task {
            try await EventStreamer(journal: journal, filter: EventQuery(), cursor: .after(1)).stream(subscription, live: collector) { collector.add($0) }
        }
        try await waitUntil { collector.ids.count >= 3 }
        journal.broadcast.closeAll()
        try await task.value
        let frames = collector.frames.withLock { $0 }
        #expect(frames.first?.hasPrefix("id: 3\ndata: {\"v\":1,\"type\":\"error\"") == true)
        #expect(frames.first?.contains("\"code\":\"cursor_expired\",\"oldest\":4") == true)
        #expect(collector.ids == [3, 4, 5])
    }

    /// Retention that runs while a replay is between two pages is said like a trim before it:
    /// the events it took are never skipped silently.
    @Test(arguments: StoreKind.allCases) func aTrimBetweenTwoPagesOfAReplayIsSaid(_ kind: StoreKind) async throws {
        let (journal, place) = try await Self.journal(kind)
        for index in 0..<1200 { try await journal.record(Self.delta("p\(index)")) }
        let collector = Collector()
        let subscription = journal.broadcast.subscribe()
        let trimmed = Mutex(false)
        let task = Task {
            try await EventStreamer(journal: journal, filter: EventQuery(), cursor: .after(0)).stream(subscription, live: collector) { text in
                collector.add(text)
                guard !trimmed.withLock({ $0 }) else { return }
                trimmed.withLock { $0 = true }
                // The first page (1…500) is written: retention now takes 1…700.
                try await place.backdate(through: 700, in: journal.log)
                try await journal.log.trim(olderThan: 1)
            }
        }
        try await waitUntil { collector.ids.count >= 1001 }
        journal.broadcast.closeAll()
        try await task.value
        #expect(collector.ids == Array(1...500) + [700] + Array(701...1200))
        #expect(collector.frames.withLock { $0 }.joined().contains("\"code\":\"cursor_expired\",\"oldest\":701"))
    }

    /// A cursor past the end of the log (the log was reset, and hands those seqs out again):
    /// the client is told, and gets the log from its start and then what comes live — not
    /// silence until the log catches up with its old cursor.
    @Test(arguments: StoreKind.allCases) func aCursorPastTheEndOfTheLogIsToldAndStartsOver(_ kind: StoreKind) async throws {
        let (journal, _) = try await Self.journal(kind)
        for index in 0..<3 { try await journal.record(Self.delta("p\(index)")) }
        let collector = Collector()
        let subscription = journal.broadcast.subscribe()
        let task = Task {
            try await EventStreamer(journal: journal, filter: EventQuery(), cursor: .after(5000)).stream(subscription, live: collector) { collector.add($0) }
        }
        try await waitUntil { collector.ids.count >= 4 }
        try await journal.record(Self.delta("live"))
        try await waitUntil { collector.ids.count >= 5 }
        journal.broadcast.closeAll()
        try await task.value
        #expect(collector.ids == [0, 1, 2, 3, 4])
        #expect(collector.frames.withLock { $0 }.first?.contains("past the end of this log") == true)
    }

    @Test func anIdleStreamSendsCommentHeartbeats() async throws {
        let journal = try Self.journal()
        let collector = Collector()
        let streamer = EventStreamer(journal: journal, filter: EventQuery(), cursor: .now, heartbeat: .milliseconds(20))
        let subscription = journal.broadcast.subscribe()
        let task = Task { try await streamer.stream(subscription, live: collector) { collector.add($0) } }
        try await waitUntil { collector.frames.withLock { $0 }.filter { $0 == SSEFrame.heartbeat }.count >= 2 }
        journal.broadcast.closeAll()
        try await task.value
        #expect(collector.frames.withLock { $0 }.first == "id: 0\n\n")
    }

    @Test func aWriteThatNeverCompletesCutsTheClientOff() async throws {
        let journal = try Self.journal()
        for index in 0..<3 { try await journal.record(Self.delta("p\(index)")) }
        let subscription = journal.broadcast.subscribe()
        let cut = Mutex(false)
        subscription.onOverflow { cut.withLock { $0 = true } }
        let streamer = EventStreamer(journal: journal, filter: EventQuery(), cursor: .after(0), stallLimit: .milliseconds(100))
        // The replay's first write never completes, as into a socket the client stopped reading.
        let task = Task { try await streamer.stream(subscription, live: Collector()) { _ in try await Task.sleep(for: .seconds(3600)) } }
        try await waitUntil { cut.withLock { $0 } }
        task.cancel()
        _ = await task.result
        #expect(cut.withLock { $0 })
    }

    /// Live, a connection that stays full (its client stopped reading) is cut once it has been
    /// so for the stall limit, as a replay write that never completes is.
    @Test func aConnectionThatStaysFullCutsTheLiveClientOff() async throws {
        let journal = try Self.journal()
        let collector = Collector()
        collector.writable.withLock { $0 = false }
        let streamer = EventStreamer(journal: journal, filter: EventQuery(), cursor: .now, stallLimit: .milliseconds(100))
        let subscription = streamer.subscribe()
        let cut = Mutex(false)
        subscription.onOverflow { cut.withLock { $0 = true } }
        let task = Task { try await streamer.stream(subscription, live: collector) { collector.add($0) } }
        try await waitUntil { !collector.frames.withLock { $0 }.isEmpty }
        try await journal.record(Self.delta("p0"))
        try await waitUntil { cut.withLock { $0 } }
        try await task.value
        #expect(collector.ids.isEmpty && subscription.overflowed)
    }

    @Test func aClientPastItsBacklogIsCutOffAndOthersAreNot() async throws {
        let broadcast = EventBroadcast(limits: .init(events: 3, bytes: 1 << 20))
        let slow = broadcast.subscribe()
        let fast = broadcast.subscribe()
        let cut = Mutex(0)
        slow.onOverflow { cut.withLock { $0 += 1 } }
        for seq in 1...5 {
            broadcast.publish(LoggedEvent(seq: Int64(seq), type: "part.delta", profile: nil, session: nil, line: "{}"))
            let taken = await fast.next()
            #expect(taken?.count == 1)
        }
        #expect(cut.withLock { $0 } == 1)
        #expect(slow.overflowed && !fast.overflowed)
        #expect(broadcast.subscriberCount == 1)

        let bytes = EventBroadcast(limits: .init(events: 100, bytes: 10))
        let big = bytes.subscribe()
        bytes.publish(LoggedEvent(seq: 1, type: "x", profile: nil, session: nil, line: String(repeating: "a", count: 11)))
        #expect(big.overflowed)
    }
}
