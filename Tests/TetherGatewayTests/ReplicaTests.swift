import Foundation
import Logging
import Synchronization
import Testing
import TetherCore
@testable import TetherGateway
@testable import TetherTestSupport
import TetherStreaming

/// Replicas of a fleet: several journals over one PostgreSQL database, as several `tether serve`
/// processes have.
@Suite struct ReplicaTests {
    static func replicas(_ count: Int) async throws -> [EventJournal] {
        let place = try StorePlace.fresh(.postgres)
        var journals: [EventJournal] = []
        for _ in 0..<count { journals.append(EventJournal(log: try await place.open(), broadcast: EventBroadcast())) }
        return journals
    }

    /// What one replica appends reaches another's live clients within a second (its poll alone
    /// would take two), once each and in seq order, whichever replica appended.
    @Test func liveEventsCrossReplicasWithinASecondInSeqOrder() async throws {
        let journals = try await Self.replicas(2)
        let (writer, reader) = (journals[0], journals[1])
        let tail = try #require(reader.tail)
        try await tail.start()
        let watching = Task { await tail.watch(logger: Logger(label: "test")) }
        defer { watching.cancel() }
        let subscription = reader.broadcast.subscribe()
        try await Task.sleep(for: .milliseconds(300))  // its LISTEN is in place

        let sent = ContinuousClock.now
        try await writer.record(EventStreamTests.delta("first"))
        let first = await subscription.next()
        #expect(ContinuousClock.now - sent < .seconds(1))
        guard case .event(let seq, _)? = first?.first else { Issue.record("no event: \(String(describing: first))"); return }
        #expect(seq == 1)

        // Both replicas append at once: the reader sees every seq once, in order.
        async let a: Void = { for index in 0..<20 { try await writer.record([EventStreamTests.delta("w\(index)")]) } }()
        async let b: Void = { for index in 0..<20 { try await reader.record([EventStreamTests.delta("r\(index)")]) } }()
        try await a
        try await b
        var seen: [Int64] = [1]
        while seen.count < 41, let batch = await subscription.next() {
            for case .event(let seq, _) in batch { seen.append(seq) }
        }
        #expect(seen == Array(1...41))
        subscription.cancel()
    }

    /// Two replicas answer the same approval at once: the backend hears one answer; the other
    /// replica answers 200 for the same decision and 409 for another.
    @Test(arguments: [Decision.accept, .decline]) func anApprovalIsAnsweredOnceAcrossReplicas(second: Decision) async throws {
        let journals = try await Self.replicas(2)
        let backend = SlowApprovalBackend(delay: .milliseconds(300))
        let profile = ServedProfile(name: "home", backend: backend)
        let desks = journals.map { ApprovalDesk(journal: $0, logger: Logger(label: "test")) }
        async let first = desks[0].answer(ApprovalAnswer(decision: .accept), approval: "a1", profile: profile)
        try await Task.sleep(for: .milliseconds(100))  // the first is with the backend
        let other = await Result(catching: { try await desks[1].answer(ApprovalAnswer(decision: second), approval: "a1", profile: profile) })
        _ = try await first
        #expect(backend.answers.withLock { $0 } == [.accept])
        switch (second, other) {
        case (.accept, .success(let line)):
            #expect(try JSONParser.parse(line)["data"]?["decision"]?.string == "accept", "\(line)")
        case (.decline, .failure(let problem as ProblemDetails)):
            #expect(problem.kind.code == "conflict", "\(problem)")
        default:
            Issue.record("the second answer (\(second)) got \(other)")
        }
        // Afterwards either replica repeats the backend's own answer.
        let again = try await desks[1].answer(ApprovalAnswer(decision: .accept), approval: "a1", profile: profile)
        #expect(try JSONParser.parse(again)["session"]?.string == "s1", "\(again)")
    }

    /// A profile's lease is held by one replica at a time; when its holder goes (its connections
    /// close, as a killed process's do), another takes it within a few seconds.
    @Test func aProfileLeaseIsHeldByOneReplicaAtATimeAndTakenOverWhenItsHolderGoes() async throws {
        let place = try StorePlace.fresh(.postgres)
        let first = try #require(try await place.open() as? PostgresEventStore)
        let second = try #require(try await place.open() as? PostgresEventStore)
        let holders = Holders()
        let logger = Logger(label: "test")
        let one = Task { await first.holdingLease(profile: "home", logger: logger) { await Self.hold("first", holders) } }
        try await Task.sleep(for: .milliseconds(500))
        let two = Task { await second.holdingLease(profile: "home", logger: logger) { await Self.hold("second", holders) } }
        defer { two.cancel() }
        try await Task.sleep(for: .seconds(4))
        #expect(holders.names.withLock { $0 } == ["first"])
        let gone = ContinuousClock.now
        first.close()
        one.cancel()
        while holders.names.withLock({ $0.count }) < 2, ContinuousClock.now - gone < .seconds(15) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(holders.names.withLock { $0 } == ["first", "second"])
        #expect(ContinuousClock.now - gone < .seconds(8))
    }

    /// A holder whose lease connection the server ended learns of it only at its next check; an
    /// append it makes before then is refused, so the profile is not logged by two replicas, and
    /// says the lease is lost, which ends the subscription.
    @Test func anAppendUnderALostLeaseIsRefused() async throws {
        let place = try StorePlace.fresh(.postgres)
        let store = try #require(try await place.open() as? PostgresEventStore)
        let other = try #require(try await place.open() as? PostgresEventStore)
        let logger = Logger(label: "test")
        let lostCalls = Mutex(0)
        try await store.client.withConnection { connection in
            #expect(try await PostgresEventStore.tryLock("home", on: connection, logger: logger))
            let lease = HeldLease(profile: "home", holder: try await PostgresEventStore.backendPID(connection, logger: logger),
                                  lost: { lostCalls.withLock { $0 += 1 } })
            try await PostgresEventStore.$heldLease.withValue(lease) {
                #expect(try await store.append([EventStreamTests.delta("held")]).first??.seq == 1)
                // With a timeout, it returns once the backend has exited and so let the lock go;
                // without one, only once it was signalled, and a check could still see the lock.
                let ended = try await other.first(Bool.self, "SELECT pg_terminate_backend(\(lease.holder), 10000)")
                #expect(ended == true)
                await #expect(throws: LeaseLost.self) { try await store.append([EventStreamTests.delta("lost")]) }
            }
        }
        #expect(lostCalls.withLock { $0 } == 1)
        // Outside a lease (an approval answered through the API) appends go on.
        #expect(try await store.append([EventStreamTests.delta("unleased")]).first??.seq == 2)
        #expect(try await other.events(after: 0, matching: EventQuery(), limit: 10).count == 2)
    }

    /// A lease's subscription ends as soon as an append finds the lease lost, not at the next check.
    @Test func aLostLeaseEndsTheSubscriptionAtOnce() async throws {
        let place = try StorePlace.fresh(.postgres)
        let store = try #require(try await place.open() as? PostgresEventStore)
        let logger = Logger(label: "test")
        let (lost, losing) = AsyncStream.makeStream(of: Void.self)
        try await store.client.withConnection { connection in
            let started = ContinuousClock.now
            async let ran: Void = PostgresEventStore.run({ while (try? await Task.sleep(for: .seconds(60))) != nil {} },
                                                        whileAlive: connection, until: lost, location: place.location, logger: logger)
            try await Task.sleep(for: .milliseconds(200))
            losing.finish()
            await ran
            #expect(ContinuousClock.now - started < .seconds(2))
        }
    }

    /// While the database is down a request's call fails after the store's deadline, saying
    /// what to check, rather than wait for the server; once it is back, calls work again.
    @Test func aCallFailsInTimeWhileTheDatabaseIsDownAndWorksWhenItIsBack() async throws {
        let place = try StorePlace.fresh(.postgres)
        let direct = try #require(URLComponents(string: place.location))
        let proxy = try FaultProxy(upstreamPort: try #require(direct.port), framing: .lines, isStream: { _ in false })
        defer { proxy.stop() }
        var proxied = direct
        proxied.port = proxy.port
        let store = try await PostgresEventStore.open(try PostgresLocation(try #require(proxied.string)),
                                                      logger: Logger(label: "test"), operationDeadline: .seconds(1))
        defer { store.close() }
        #expect(try await store.append([EventStreamTests.delta("up")]).first??.seq == 1)

        let down = Task { try await proxy.restart(downFor: .seconds(5)) }
        try await Task.sleep(for: .milliseconds(200))
        let asked = ContinuousClock.now
        do {
            _ = try await store.events(after: 0, matching: EventQuery(), limit: 10)
            Issue.record("a read answered while the database was down")
        } catch let error as DatabaseUnanswered {
            #expect(error.description.contains("did not answer within 1 s"))
            #expect(!error.description.contains("password"))
        }
        #expect(ContinuousClock.now - asked < .seconds(3))
        try await down.value

        let back = ContinuousClock.now
        var read: [LoggedEvent] = []
        while read.isEmpty, ContinuousClock.now - back < .seconds(20) {
            read = (try? await store.events(after: 0, matching: EventQuery(), limit: 10)) ?? []
            if read.isEmpty { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(read.map(\.seq) == [1])
    }

    final class Holders: Sendable {
        let names = Mutex<[String]>([])
    }

    static func hold(_ name: String, _ holders: Holders) async {
        holders.names.withLock { $0.append(name) }
        while (try? await Task.sleep(for: .seconds(60))) != nil {}
    }
}
