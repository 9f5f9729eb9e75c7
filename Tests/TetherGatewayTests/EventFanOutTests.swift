import NIOCore
import Synchronization
import Testing
@testable import TetherGateway

/// The live fan-out: one frame per event for every client, filters applied before a client is
/// queued or woken, writes batched per client when there are many clients.
@Suite struct EventFanOutTests {
    static func event(_ seq: Int64, profile: String = "home", type: String = "part.delta", line: String = "{}") -> LoggedEvent {
        LoggedEvent(seq: seq, type: type, profile: profile, session: "s1", line: line)
    }

    static func seqs(_ batch: [EventSubscription.Delivery]?) -> [Int64] {
        (batch ?? []).compactMap { delivery in
            if case .event(let event, _) = delivery { return event.seq }
            return nil
        }
    }

    @Test func aFilteredClientIsNeitherQueuedNorWokenForWhatItExcludes() async {
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
        #expect(EventBroadcast.writeGap(clients: 50, writesPerSecond: 50_000) == .zero)
        #expect(EventBroadcast.writeGap(clients: 100, writesPerSecond: 50_000) == .milliseconds(2))
        #expect(EventBroadcast.writeGap(clients: 1000, writesPerSecond: 50_000) == .milliseconds(20))
    }

    /// With a gap, the first event wakes an idle client at once; the next ones within the gap
    /// wait for the broadcast's one timer and arrive together, in order.
    @Test func withManyClientsEventsWithinTheGapArriveInOneBatch() async throws {
        // 10 clients at 100 writes a second: a gap of 100 ms.
        let broadcast = EventBroadcast(writesPerSecond: 100)
        let clients = (0..<10).map { _ in broadcast.subscribe() }
        let watched = clients[0]
        let first = Task { await watched.next() }
        try await Task.sleep(for: .milliseconds(20))
        let start = ContinuousClock.now
        broadcast.publish(Self.event(1))
        #expect(Self.seqs(await first.value) == [1])
        #expect(ContinuousClock.now - start < .milliseconds(80))
        let rest = Task { await watched.next() }
        try await Task.sleep(for: .milliseconds(10))
        for seq in 2...4 { broadcast.publish(Self.event(Int64(seq))) }
        #expect(Self.seqs(await rest.value) == [2, 3, 4])
        for client in clients.dropFirst() { #expect(Self.seqs(await client.next()) == [1, 2, 3, 4]) }
    }

    @Test func smallFramesAreJoinedAndALargeOneIsShared() {
        let small = (1...3).map { ByteBuffer(string: "id: \($0)\ndata: {}\n\n") }
        let large = ByteBuffer(string: String(repeating: "x", count: 5000))
        let out = EventStreamer.coalesced(small + [large] + small, copyingBelow: 4096)
        #expect(out.count == 3)
        #expect(String(buffer: out[0]) == small.map { String(buffer: $0) }.joined())
        #expect(out[1] == large && out[2] == out[0])
        #expect(EventStreamer.coalesced([large]) == [large])
    }
}
