import NIOCore
import NIOPosix
import Synchronization
import Testing
@testable import TetherGateway

/// The live fan-out: one frame per event for every client, filters applied before a client is
/// queued or woken, each client written from its connection's event loop, writes batched per
/// client when there are many clients, and a slow client cut without costing the others.
@Suite struct EventFanOutTests {
    static func event(_ seq: Int64, profile: String = "home", type: String = "part.delta", line: String = "{}") -> LoggedEvent {
        LoggedEvent(seq: seq, type: type, profile: profile, session: "s1", line: line)
    }

    static func seqs(_ batch: [EventSubscription.Delivery]?) -> [Int64] {
        (batch ?? []).compactMap { delivery in
            if case .event(let seq, _) = delivery { return seq }
            return nil
        }
    }

    /// A connection as the loop's writer sees it: records each write's event ids, counts how
    /// often it was looked at, and can be made to stop accepting (a client that stopped reading).
    final class RecordingSink: LiveFrameSink {
        let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let writable = Mutex(true)
        let looks = Mutex(0)
        let writes = Mutex<[[Int64]]>([])

        var isWritable: Bool {
            looks.withLock { $0 += 1 }
            return writable.withLock { $0 }
        }

        func write(_ frames: [ByteBuffer]) {
            let text = frames.map { String(buffer: $0) }.joined()
            let ids = text.components(separatedBy: "\n\n").compactMap { block in
                block.split(separator: "\n").first { $0.hasPrefix("id: ") }.flatMap { Int64($0.dropFirst(4)) }
            }
            writes.withLock { $0.append(ids) }
        }

        func whenClosed(_ action: @escaping @Sendable () -> Void) {}

        var ids: [Int64] { writes.withLock { $0 }.flatMap { $0 } }
    }

    /// `client` written live to `sink` from the sink's loop, as a stream's live phase does.
    static func live(_ client: EventSubscription, _ sink: RecordingSink, on broadcast: EventBroadcast) async throws -> Task<Void, Never> {
        let task = Task { await client.writeLive(to: sink, after: 0, fanOut: broadcast.fanOut(for: sink.eventLoop)) }
        // Registered once the loop ran its first (empty) look at the client.
        try await waitUntil { sink.looks.withLock { $0 } > 0 }
        return task
    }

    @Test func aFilteredClientIsNeitherQueuedNorWokenForWhatItExcludes() async throws {
        let broadcast = EventBroadcast()
        let work = broadcast.subscribe(matching: EventQuery(profiles: ["work"], session: nil, types: []))
        let all = broadcast.subscribe()
        for seq in Int64(1)...100 { broadcast.publish(Self.event(seq)) }
        #expect(work.queuedEvents == 0 && all.queuedEvents == 100)
        broadcast.publish(Self.event(101, profile: "work"))
        #expect(work.queuedEvents == 1)
        #expect(Self.seqs(await work.next()) == [101])
        #expect(Self.seqs(await all.next()) == Array(Int64(1)...101))
    }

    /// A live client is looked at by its loop only for events it takes: the ones its filter
    /// excludes neither queue nor put it on the loop's list.
    @Test func aLiveClientsLoopNeverLooksAtItForExcludedEvents() async throws {
        let broadcast = EventBroadcast()
        let work = broadcast.subscribe(matching: EventQuery(profiles: ["work"], session: nil, types: []))
        let all = broadcast.subscribe()
        let workSink = RecordingSink(), allSink = RecordingSink()
        let tasks = [try await Self.live(work, workSink, on: broadcast), try await Self.live(all, allSink, on: broadcast)]
        let looked = workSink.looks.withLock { $0 }
        for seq in Int64(1)...100 { broadcast.publish(Self.event(seq)) }
        try await waitUntil { allSink.ids.count == 100 }
        #expect(workSink.looks.withLock { $0 } == looked && workSink.ids.isEmpty && work.queuedEvents == 0)
        broadcast.publish(Self.event(101, profile: "work"))
        try await waitUntil { workSink.ids == [101] }
        broadcast.closeAll()
        for task in tasks { await task.value }
        #expect(allSink.ids == Array(1...101))
    }

    @Test func everyClientGetsTheSameBytesOfAnEvent() async {
        let broadcast = EventBroadcast()
        let first = broadcast.subscribe()
        let second = broadcast.subscribe()
        broadcast.publish(Self.event(7, line: "{\"v\":1}"))
        guard case .event(_, let a)? = await first.next()?.first, case .event(_, let b)? = await second.next()?.first else {
            Issue.record("no event")
            return
        }
        #expect(String(buffer: a) == "id: 7\ndata: {\"v\":1}\n\n" && a == b)
    }

    @Test func theGapGrowsWithTheClientsPastTheWriteBudget() {
        #expect(EventBroadcast.writeGap(clients: 100, eventsPerSecond: 200, writesPerSecond: 25_000) == .zero)
        #expect(EventBroadcast.writeGap(clients: 100, eventsPerSecond: 1000, writesPerSecond: 25_000) == .milliseconds(4))
        #expect(EventBroadcast.writeGap(clients: 1000, eventsPerSecond: 200, writesPerSecond: 25_000) == .milliseconds(40))
        #expect(EventBroadcast.writeGap(clients: 1000, eventsPerSecond: 1, writesPerSecond: 25_000) == .zero)
    }

    /// With a gap, the first event is written at once; the next ones within the gap wait for
    /// the loop's one timer and go out together, in order, one write per client.
    @Test func withManyClientsEventsWithinTheGapGoOutInOneWrite() async throws {
        // 10 clients at 10 writes a second: past it from the second event on, a gap of 1 s.
        let broadcast = EventBroadcast(writesPerSecond: 10)
        let clients = (0..<10).map { _ in broadcast.subscribe() }
        let sinks = clients.map { _ in RecordingSink() }
        var tasks: [Task<Void, Never>] = []
        for (client, sink) in zip(clients, sinks) { tasks.append(try await Self.live(client, sink, on: broadcast)) }
        let start = ContinuousClock.now
        broadcast.publish(Self.event(1))
        try await waitUntil { sinks.allSatisfy { $0.ids == [1] } }
        #expect(ContinuousClock.now - start < .milliseconds(200))
        for seq in 2...4 { broadcast.publish(Self.event(Int64(seq))) }
        try await waitUntil { sinks.allSatisfy { $0.ids.count == 4 } }
        for sink in sinks { #expect(sink.writes.withLock { $0 } == [[1], [2, 3, 4]]) }
        broadcast.closeAll()
        for task in tasks { await task.value }
    }

    /// A client whose connection stopped taking writes is cut once its backlog is full; the
    /// others get every event, once, in order, and the broadcast forgets the cut one.
    @Test func aSlowLiveClientIsCutAndTheOthersLoseNothing() async throws {
        let broadcast = EventBroadcast(limits: .init(events: 50, bytes: 1 << 20))
        let slow = broadcast.subscribe()
        let cut = Mutex(0)
        slow.onOverflow { cut.withLock { $0 += 1 } }
        let slowSink = RecordingSink()
        let slowTask = try await Self.live(slow, slowSink, on: broadcast)
        slowSink.writable.withLock { $0 = false }
        let fast = (0..<5).map { _ in broadcast.subscribe() }
        let sinks = fast.map { _ in RecordingSink() }
        var tasks: [Task<Void, Never>] = []
        for (client, sink) in zip(fast, sinks) { tasks.append(try await Self.live(client, sink, on: broadcast)) }
        for seq in Int64(1)...300 {
            broadcast.publish(Self.event(seq))
            // Paced so the fast clients' loops keep up: their backlog stays under the limit.
            if seq % 10 == 0 { try await Task.sleep(for: .milliseconds(2)) }
        }
        await slowTask.value
        #expect(cut.withLock { $0 } == 1 && slow.overflowed)
        #expect(slowSink.ids.isEmpty)
        try await waitUntil { sinks.allSatisfy { $0.ids.count >= 300 } }
        for sink in sinks { #expect(sink.ids == Array(1...300)) }
        #expect(broadcast.subscriberCount == 5 && fast.allSatisfy { !$0.overflowed })
        broadcast.closeAll()
        for task in tasks { await task.value }
    }

    /// A graceful end (shutdown) writes what the client still held before its stream ends.
    @Test func aLiveStreamEndsAfterWritingWhatItHeld() async throws {
        let broadcast = EventBroadcast(writesPerSecond: 1)
        let client = broadcast.subscribe()
        let sink = RecordingSink()
        let task = try await Self.live(client, sink, on: broadcast)
        for seq in Int64(1)...3 { broadcast.publish(Self.event(seq)) }
        broadcast.closeAll()
        await task.value
        #expect(sink.ids == [1, 2, 3])
    }

    @Test func smallFramesAreJoinedAndALargeOneIsShared() {
        let small = (1...3).map { ByteBuffer(string: "id: \($0)\ndata: {}\n\n") }
        let large = ByteBuffer(string: String(repeating: "x", count: 5000))
        let out = EventSubscription.coalesced(small + [large] + small, copyingBelow: 4096)
        #expect(out.count == 3)
        #expect(String(buffer: out[0]) == small.map { String(buffer: $0) }.joined())
        #expect(out[1] == large && out[2] == out[0])
        #expect(EventSubscription.coalesced([large]) == [large])
    }
}
