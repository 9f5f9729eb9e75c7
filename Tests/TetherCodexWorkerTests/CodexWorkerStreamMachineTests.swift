import Foundation
import Testing
import TetherCore
import TetherNet
@testable import TetherCodexWorker
import TetherStreaming

/// `CodexWorkerStreamMachine`'s rules, from the recorded job transcripts: each test feeds what
/// the follower would (a snapshot's state, decoded stream batches, a failed request, a page) and
/// checks the actions, without a socket.
@Suite struct CodexWorkerStreamMachineTests {
    let job = "job_1560b5bbcaeb488b"
    let thread = "01a2c3d4-thread"
    let endpoint = "http://127.0.0.1:8765"

    /// The recorded job (`cancel-while-waiting`: seqs 0…10, `job.finished` at 9).
    func envelopes(_ name: String = "cancel-while-waiting") throws -> [JSONValue] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "jsonl", subdirectory: "Transcripts"))
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    func seq(_ envelope: JSONValue) -> Int64 { envelope["seq"]?.int ?? -99 }

    func machine(raw: Bool = false) -> CodexWorkerStreamMachine {
        CodexWorkerStreamMachine(job: job, thread: thread, keepsRaw: raw)
    }

    func emitted(_ actions: [CodexWorkerStreamMachine.Action]) -> [Event] {
        actions.flatMap { action -> [Event] in
            if case .emit(let events) = action { return events }
            return []
        }
    }

    func lostErrors(_ actions: [CodexWorkerStreamMachine.Action]) -> [String] {
        emitted(actions).filter { $0.type == .error && $0.data["code"]?.string == TetherError.Code.eventsLost.rawValue }
            .compactMap { $0.data["message"]?.string }
    }

    // MARK: Start

    @Test func aLiveJobIsStreamedFromTheCursorItResumesFrom() {
        var fresh = machine()
        #expect(fresh.start(state: "RUNNING", since: nil, live: true, mapper: CodexWorkerEventMapper()) == [.connect(after: -1)])
        var resumed = machine()
        #expect(resumed.start(state: "RUNNING", since: 4, live: true, mapper: CodexWorkerEventMapper()) == [.connect(after: 4)])
        #expect(resumed.cursor == 4)
    }

    @Test func theMapperSLastSeqWinsOverSinceOnARetry() throws {
        var mapper = CodexWorkerEventMapper()
        for envelope in try envelopes().prefix(6) { _ = mapper.map(envelope) }  // seqs 0…5
        var machine = machine()
        #expect(machine.start(state: "DONE", since: 2, live: true, mapper: mapper) == [.connect(after: 5)])
    }

    @Test func notLiveOrATerminalJobResumedFromACursorIsOnePage() {
        var replay = machine()
        #expect(replay.start(state: "RUNNING", since: nil, live: false, mapper: CodexWorkerEventMapper()) == [.readPage(after: -1)])
        var resumedDone = machine()
        #expect(resumedDone.start(state: "DONE", since: 3, live: true, mapper: CodexWorkerEventMapper()) == [.readPage(after: 3)])
        // From the start, a terminal job's stream ends with its job.finished: streamed.
        var fromStart = machine()
        #expect(fromStart.start(state: "CANCELLED", since: nil, live: true, mapper: CodexWorkerEventMapper()) == [.connect(after: -1)])
    }

    @Test func aJobAlreadyFinishedInThisStreamIsNotFollowedAgain() throws {
        var mapper = CodexWorkerEventMapper()
        for envelope in try envelopes() { _ = mapper.map(envelope) }
        var machine = machine()
        #expect(machine.start(state: "RUNNING", since: nil, live: true, mapper: mapper) == [.finish])
    }

    // MARK: The live stream

    @Test func theCursorAdvancesWithEachSeqAndNeverGoesBack() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        _ = machine.start(state: "RUNNING", since: nil, live: true, mapper: mapper)
        let all = try envelopes()
        let actions = machine.receive(all.prefix(5).map { .envelope($0) }, endpoint: endpoint, mapper: &mapper)
        #expect(machine.cursor == 4)
        #expect(lostErrors(actions).isEmpty)
        #expect(emitted(actions).first?.type == .turnStarted)
        #expect(emitted(actions).last?.cursor == "\(job):4")
        // A duplicate of an older seq (a reconnect's overlap) neither moves it back nor says a gap.
        let again = machine.receive([.envelope(all[2]), .envelope(all[5])], endpoint: endpoint, mapper: &mapper)
        #expect(machine.cursor == 5)
        #expect(lostErrors(again).isEmpty)
        #expect(emitted(again).allSatisfy { $0.cursor == "\(job):5" })
    }

    @Test func aGapBetweenTheCursorAndTheNextSeqIsReportedExactlyOnce() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        _ = machine.start(state: "RUNNING", since: nil, live: true, mapper: mapper)
        let all = try envelopes()
        _ = machine.receive([.envelope(all[0]), .envelope(all[1])], endpoint: endpoint, mapper: &mapper)
        // Seqs 2…5 trimmed before they were read.
        let actions = machine.receive([.envelope(all[6]), .envelope(all[7])], endpoint: endpoint, mapper: &mapper)
        #expect(lostErrors(actions) == ["4 events of job \(job) were lost (seq 2…5): the Codex Worker no longer keeps them"])
        // The gap comes before the envelope that revealed it.
        let events = emitted(actions)
        #expect(events.first?.type == .error)
        #expect(events.first?.session == thread && events.first?.turn == job)
        #expect(events.dropFirst().first?.cursor == "\(job):6")
        // One missing seq is said in the singular.
        let one = machine.receive([.envelope(all[9])], endpoint: endpoint, mapper: &mapper)
        #expect(lostErrors(one) == ["1 event of job \(job) was lost (seq 8): the Codex Worker no longer keeps them"])
    }

    @Test func aResumeFromSinceReportsWhatCameBeforeTheFirstRetainedSeq() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        _ = machine.start(state: "RUNNING", since: 1, live: true, mapper: mapper)
        let actions = machine.receive([.envelope(try envelopes()[4])], endpoint: endpoint, mapper: &mapper)
        #expect(lostErrors(actions) == ["2 events of job \(job) were lost (seq 2…3): the Codex Worker no longer keeps them"])
    }

    @Test func jobFinishedEndsTheStreamAfterTheBatchUpToIt() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        _ = machine.start(state: "RUNNING", since: nil, live: true, mapper: mapper)
        let actions = machine.receive(try envelopes().map { .envelope($0) }, endpoint: endpoint, mapper: &mapper)
        #expect(actions.last == .finish)
        #expect(machine.finished)
        // What follows job.finished in the same read (the stale approval.resolved, seq 10) is not read.
        #expect(machine.cursor == 9)
        #expect(emitted(actions).last?.type == .turnCompleted)
        #expect(!emitted(actions).contains { $0.type == .approvalResolved })
    }

    @Test func aBatchWithoutJobFinishedDoesNotFinish() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        _ = machine.start(state: "RUNNING", since: nil, live: true, mapper: mapper)
        let actions = machine.receive(try envelopes().prefix(9).map { .envelope($0) }, endpoint: endpoint, mapper: &mapper)
        #expect(!actions.contains(.finish))
        #expect(!machine.finished)
    }

    @Test func theLinkSaysWhenItReconnectsAndConnects() {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        let actions = machine.receive([
            .link(.connecting(attempt: 1)),
            .link(.open(status: 200, headers: [:])),
            .link(.comment("ping")),
            .link(.disconnected(reason: nil, retryIn: .seconds(2), attempt: 1)),
            .link(.connecting(attempt: 2)),
        ], endpoint: endpoint, mapper: &mapper)
        let states = emitted(actions).map { [$0.data["state"]?.string, $0.data["reason"]?.string, $0.data["attempt"]?.int.map(String.init)] }
        #expect(states == [
            ["connected", nil, nil],
            ["reconnecting", "the stream ended; retrying in 2.0 s", "1"],
            ["reconnecting", nil, "2"],
        ])
        #expect(machine.cursor == -1)
    }

    @Test func hotEnvelopesAdvanceTheCursorAndAreGapCheckedToo() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        _ = machine.start(state: "RUNNING", since: 0, live: true, mapper: mapper)
        let delta = CodexWorkerHotEnvelope.delta(CodexWorkerDelta(type: "item.agentMessage.delta", job: job, seq: 3, thread: thread,
                                                                  item: "msg_1", delta: "hi"))
        let actions = machine.receive([.hot(delta)], endpoint: endpoint, mapper: &mapper)
        #expect(machine.cursor == 3)
        #expect(lostErrors(actions) == ["2 events of job \(job) were lost (seq 1…2): the Codex Worker no longer keeps them"])
        #expect(emitted(actions).last?.type == .partDelta)
    }

    @Test func rawIsKeptOnlyWhenAskedFor() throws {
        let envelope = try envelopes()[0]
        var mapper = CodexWorkerEventMapper()
        var raw = machine(raw: true)
        #expect(emitted(raw.receive([.envelope(envelope)], endpoint: endpoint, mapper: &mapper)).allSatisfy { $0.raw == envelope })
        var other = CodexWorkerEventMapper()
        var plain = machine()
        #expect(emitted(plain.receive([.envelope(envelope)], endpoint: endpoint, mapper: &other)).allSatisfy { $0.raw == nil })
    }

    // MARK: Failures

    @Test func cursorExpiredReconnectsWithoutACursorAndTheGapIsThenReported() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        let all = try envelopes()
        _ = machine.start(state: "RUNNING", since: nil, live: true, mapper: mapper)
        _ = machine.receive([.envelope(all[0]), .envelope(all[1])], endpoint: endpoint, mapper: &mapper)
        #expect(machine.streamFailed(status: 409, code: "CURSOR_EXPIRED", mapper: mapper) == [.connect(after: nil)])
        // Another 409 is the transport's failure, not a reason to drop the cursor.
        var other = self.machine()
        #expect(other.streamFailed(status: 409, code: "CONFLICT", mapper: mapper) == [.failed])
        // Every retained event then comes, from seq 5: 2…4 were lost.
        let actions = machine.receive(all[5...].map { .envelope($0) }, endpoint: endpoint, mapper: &mapper)
        #expect(lostErrors(actions) == ["3 events of job \(job) were lost (seq 2…4): the Codex Worker no longer keeps them"])
        #expect(actions.last == .finish)
    }

    @Test func aJobGoneWithA404IsSaidOnceAndTheStreamEnds() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        for envelope in try envelopes().prefix(4) { _ = mapper.map(envelope) }
        _ = machine.start(state: "RUNNING", since: nil, live: true, mapper: mapper)
        let actions = machine.streamFailed(status: 404, code: "JOB_NOT_FOUND", mapper: mapper)
        #expect(actions.count == 2 && actions.last == .finish)
        let gone = emitted(actions)
        #expect(gone.count == 1)
        #expect(gone.first?.data["code"]?.string == TetherError.Code.eventsLost.rawValue)
        #expect(gone.first?.data["message"]?.string
                == "job \(job) is gone from the Codex Worker (404 JOB_NOT_FOUND): it was restarted and kept nothing after seq 3")
        #expect(gone.first?.data["hint"]?.string == "thread history survives: tether history \(thread)")
        #expect(gone.first?.data["retryable"]?.bool == false)
    }

    @Test func refusalsEndTheStreamAtOnceAndOtherFailuresAreTheTransports() {
        let mapper = CodexWorkerEventMapper()
        var machine = machine()
        #expect(machine.streamFailed(status: 401, code: nil, mapper: mapper) == [.refused(status: 401, code: "UNAUTHORIZED")])
        #expect(machine.streamFailed(status: 403, code: "FORBIDDEN", mapper: mapper) == [.refused(status: 403, code: "FORBIDDEN")])
        #expect(machine.streamFailed(status: 503, code: nil, mapper: mapper) == [.failed])
        #expect(machine.streamFailed(status: nil, code: nil, mapper: mapper) == [.failed])
    }

    // MARK: One page

    @Test func aPageIsMappedWithItsGapsAndFinishes() throws {
        var mapper = CodexWorkerEventMapper()
        var machine = machine()
        #expect(machine.start(state: "DONE", since: 0, live: true, mapper: mapper) == [.readPage(after: 0)])
        let all = try envelopes()
        let actions = machine.replayed([all[3], all[4], all[9]], mapper: &mapper)
        #expect(lostErrors(actions) == [
            "2 events of job \(job) were lost (seq 1…2): the Codex Worker no longer keeps them",
            "4 events of job \(job) were lost (seq 5…8): the Codex Worker no longer keeps them",
        ])
        #expect(actions.last == .finish)
        #expect(emitted(actions).last?.type == .turnCompleted)
    }

    @Test func aPageRefusedForItsCursorIsReadFromTheFirstRetainedEvent() {
        let machine = machine()
        #expect(machine.pageRefused(code: "CURSOR_EXPIRED", after: 7) == .readPage(after: nil))
        #expect(machine.pageRefused(code: "CURSOR_EXPIRED", after: nil) == nil)
        #expect(machine.pageRefused(code: "JOB_NOT_FOUND", after: 7) == nil)
    }

    // MARK: Retrying a job's stream

    struct Zero: RandomNumberGenerator {
        mutating func next() -> UInt64 { 0 }
    }

    @Test func aPassingFailureIsRetriedOnTheScheduleAndProgressRestartsIt() {
        var retry = CodexWorkerStreamMachine.Retry(configuration: .init(backoff: [.seconds(1), .seconds(2), .seconds(5)], jitter: 0))
        var random = Zero()
        let down = TetherError(.unavailable, "connection refused", retryable: true)
        func fail(lastSeq: Int64?) -> CodexWorkerStreamMachine.Retry.Action {
            retry.failed(down, doing: "streaming job j", lastSeq: lastSeq, at: .now, using: &random)
        }
        retry.attempting(lastSeq: nil)
        // Compared without `ts`: the machine's event and this one are made at different moments.
        guard case .retry(let first, let said) = fail(lastSeq: nil) else { Issue.record("not retried"); return }
        let expected = Event.connection(.reconnecting, attempt: 1, reason: "streaming job j: connection refused; retrying in 1.0 s")
        #expect(first == .seconds(1) && said.type == expected.type && said.data == expected.data)
        retry.attempting(lastSeq: nil)
        guard case .retry(let second, let event) = fail(lastSeq: nil) else { Issue.record("not retried"); return }
        #expect(second == .seconds(2) && event.data["attempt"]?.int == 2)
        // Events arrived in this attempt: the next failure is a fresh one.
        retry.attempting(lastSeq: nil)
        guard case .retry(let fresh, _) = fail(lastSeq: 12) else { Issue.record("not retried"); return }
        #expect(fresh == .seconds(1))
    }

    @Test func aLastingFailureOrAnExhaustedScheduleStops() {
        var random = Zero()
        var retry = CodexWorkerStreamMachine.Retry(configuration: .init(backoff: [.seconds(1)], jitter: 0, maxAttempts: 1))
        retry.attempting(lastSeq: nil)
        #expect(retry.failed(TetherError(.authentication, "no"), doing: "x", lastSeq: nil, at: .now, using: &random) == .stop)
        let down = TetherError(.unavailable, "down", retryable: true)
        guard case .retry = retry.failed(down, doing: "x", lastSeq: nil, at: .now, using: &random) else {
            Issue.record("not retried"); return
        }
        retry.attempting(lastSeq: nil)
        #expect(retry.failed(down, doing: "x", lastSeq: nil, at: .now, using: &random) == .stop)
    }
}

extension CodexWorkerStreamMachine {
    /// What one network read brought, decoded, in order, fed as the follower feeds it: `receive`
    /// each element, then `endOfBatch`.
    fileprivate mutating func receive(_ batch: [Decoded], endpoint: String, mapper: inout CodexWorkerEventMapper) -> [Action] {
        for element in batch { receive(element, endpoint: endpoint, mapper: &mapper) }
        return endOfBatch(mapper: &mapper)
    }
}
