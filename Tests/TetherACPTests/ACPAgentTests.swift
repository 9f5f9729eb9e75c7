import Foundation
import Logging
import Synchronization
import Testing
import TetherCore
@testable import TetherACP
import TetherStreaming

/// A backend that plays a scripted turn: the agent's I/O without a network.
final class ScriptedBackend: Backend, Sendable {
    struct State {
        var turn: [Event] = []
        /// Leave the turn's stream open after the script (a backend that ignores `abort`).
        var hang = false
        var listDelay: Duration = .zero
        var aborted: [String?] = []
        /// How many turns were sent (`sendAndFollow`).
        var sent = 0
        /// The streams of hanging turns, for `endTurn`.
        var open: [AsyncThrowingStream<Event, any Error>.Continuation] = []
        var approved: [(String, Decision)] = []
        /// Errors `approve` throws, one a call, before it succeeds.
        var approveFailures: [TetherError] = []
    }

    let state: Mutex<State>
    init(_ state: State = State()) { self.state = Mutex(state) }

    var kind: BackendKind { .codexWorker }
    var capabilities: BackendCapabilities { [.sessions, .createSession, .history, .send, .events, .approvals, .abort] }

    func check() async throws -> CheckReport { CheckReport(endpoint: "test", reachable: true, authenticated: true) }
    func listSessions(_ request: SessionListRequest) async throws -> [Session] {
        try await Task.sleep(for: state.withLock { $0.listDelay })
        return [Session(id: "s1", title: "one", directory: "/p")]
    }
    func createSession(_ request: SessionCreateRequest) async throws -> Session { Session(id: "s1", directory: request.directory) }
    func session(id: String) async throws -> Session {
        guard id == "s1" else { throw TetherError(.notFound, "thread \(id) not found", hint: "list them") }
        return Session(id: id)
    }
    func history(session: String, limit: Int?) async throws -> [Event] { [] }
    func send(_ request: SendRequest) async throws -> SendReceipt { SendReceipt(session: request.session, turn: "t1") }
    func sendAndFollow(_ request: SendRequest) -> EventStream {
        let (events, hang) = state.withLock {
            $0.sent += 1
            return ($0.turn, $0.hang)
        }
        return EventStream(AsyncThrowingStream { continuation in
            for event in events { continuation.yield(event) }
            if hang { state.withLock { $0.open.append(continuation) } } else { continuation.finish() }
        })
    }

    /// Plays `events` to the last hanging turn and ends its stream.
    func endTurn(_ events: [Event]) {
        guard let continuation = state.withLock({ $0.open.popLast() }) else { return }
        for event in events { continuation.yield(event) }
        continuation.finish()
    }
    func events(_ request: EventsRequest) -> EventStream { EventStream([]) }
    func pendingApprovals(session: String?) async throws -> [Approval] { [] }
    func approve(id: String, answer: ApprovalAnswer) async throws -> Event {
        if let failure = state.withLock({ $0.approveFailures.isEmpty ? nil : $0.approveFailures.removeFirst() }) { throw failure }
        state.withLock { $0.approved.append((id, answer.decision)) }
        return .approvalResolved(id: id, session: "s1", turn: "t1", decision: answer.decision.rawValue)
    }
    func abort(session: String, turn: String?) async throws { state.withLock { $0.aborted.append(turn) } }
}

/// Every line the agent wrote, parsed.
final class ReceivedLines: Sendable {
    let lines = Mutex<[JSONValue]>([])
}

/// Cancel grace timers that end when the test says, numbered in the order they started.
final class GraceTimers: Sendable {
    private struct State {
        var started = 0
        var ended: Set<Int> = []
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    var started: Int { state.withLock { $0.started } }

    /// The agent's `sleep`. Like a timer that already woke, it does not heed cancellation.
    func sleep(_: Duration) async {
        await withCheckedContinuation { continuation in
            let endNow = state.withLock { state in
                let number = state.started
                state.started += 1
                if state.ended.contains(number) { return true }
                state.waiting[number] = continuation
                return false
            }
            if endNow { continuation.resume() }
        }
    }

    func end(_ number: Int) {
        state.withLock { state in
            state.ended.insert(number)
            return state.waiting.removeValue(forKey: number)
        }?.resume()
    }
}

/// What the agent logs, at every level.
final class CapturedLog: LogHandler, Sendable {
    let messages = Mutex<[String]>([])
    var logLevel: Logger.Level { get { .trace } set {} }
    var metadata: Logger.Metadata { get { [:] } set {} }
    subscript(metadataKey _: String) -> Logger.Metadata.Value? { get { nil } set {} }

    func log(event: LogEvent) {
        messages.withLock { $0.append(event.message.description) }
    }

    func contains(_ text: String) -> Bool { messages.withLock { $0.contains { $0.contains(text) } } }
}

/// The agent on in-memory stdio.
struct AgentHarness {
    let input: AsyncStream<String>.Continuation
    let received = ReceivedLines()
    let agent: ACPAgent
    let served: Task<Void, Never>

    init(_ backend: ScriptedBackend, cancelGrace: Duration = .seconds(8), shutdownGrace: Duration = .seconds(2),
         graceTimers: GraceTimers? = nil, log: CapturedLog? = nil) {
        let (stream, input) = AsyncStream<String>.makeStream()
        self.input = input
        let lines = received
        let output = ACPOutput { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            lines.lines.withLock { $0.append(try! JSONParser.parse(text)) }
        }
        let logger = log.map { log in Logger(label: "test") { _ in log } } ?? Logger(label: "test")
        let agent = ACPAgent(configuration: .init(version: "test", profile: "p", cancelGrace: cancelGrace,
                                                         shutdownGrace: shutdownGrace),
                             backend: backend, output: output, logger: logger,
                             sleep: { duration in
                                 if let graceTimers { await graceTimers.sleep(duration) } else { try await Task.sleep(for: duration) }
                             })
        self.agent = agent
        served = Task { await agent.serve(stream) }
    }

    func send(_ line: String) { input.yield(line) }

    /// `session/new` (s1), answered.
    func openSession() async throws {
        send(newSessionLine)
        _ = try #require(await response(1))
    }

    /// Lines handled back to back in one turn of the agent, as `serve` handles lines that were
    /// already buffered: no task of the agent runs between them.
    func sendTogether(_ lines: String...) async { await agent.receive(lines) }

    /// The first line that matches, waiting up to 5 s.
    func wait(for predicate: (JSONValue) -> Bool) async -> JSONValue? {
        for _ in 0..<500 {
            if let line = received.lines.withLock({ $0.first(where: predicate) }) { return line }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    func response(_ id: Int64) async -> JSONValue? {
        await wait { $0["id"] == .int(id) && $0["method"] == nil }
    }

    /// Waits up to 5 s for `condition`.
    func until(_ condition: () -> Bool) async {
        for _ in 0..<500 where !condition() {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

extension ACPAgent {
    func receive(_ lines: [String]) {
        for line in lines { receive(line) }
    }
}

let newSessionLine = #"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#
let cancelLine = #"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#
/// A turn that starts and completes, with nothing in between.
let aTurn: [Event] = [.turnStarted(session: "s1", turn: "t1"), .turnCompleted(session: "s1", turn: "t1", outcome: .completed)]
func promptLine(_ id: Int) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#
}

@Suite struct ACPAgentTests {
    @Test func concurrentRequestsAreAnsweredByIDAsTheyFinish() async throws {
        let harness = AgentHarness(ScriptedBackend(.init(listDelay: .milliseconds(300))))
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}"#)
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}"#)
        let list = try #require(await harness.response(1))
        #expect(list["result"]?["sessions"]?[0]?["sessionId"] == "s1")
        let ids = harness.received.lines.withLock { $0.compactMap { $0["id"] } }
        #expect(ids == [2, 1])
        harness.input.finish()
        await harness.served.value
    }

    @Test func aPromptNeedsAnOpenSession() async throws {
        let harness = AgentHarness(ScriptedBackend())
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#)
        let answer = try #require(await harness.response(1))
        #expect(answer["error"]?["code"] == -32602)
        #expect(answer["error"]?["message"]?.string?.contains("call session/new or session/load first") == true)
        harness.input.finish()
        await harness.served.value
    }

    @Test func aTurnStreamsOnlyItsSessionAndEndsTheTurn() async throws {
        let backend = ScriptedBackend(.init(turn: [
            .turnStarted(session: "s1", turn: "t1"),
            .partDelta(session: "s1", turn: "t1", part: "p1", kind: .text, delta: "Hello"),
            .partDelta(session: "other", turn: "t9", part: "p9", kind: .text, delta: "not yours"),
            .turnCompleted(session: "s1", turn: "t1", outcome: .completed),
        ]))
        let harness = AgentHarness(backend)
        try await harness.openSession()
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#)
        let answer = try #require(await harness.response(2))
        #expect(answer["result"]?["stopReason"] == "end_turn")
        let updates = harness.received.lines.withLock { $0.filter { $0["method"] == "session/update" } }
        #expect(updates.count == 1)
        #expect(updates.first?["params"]?["update"]?["content"]?["text"] == "Hello")
        harness.input.finish()
        await harness.served.value
    }

    @Test func aFailedTurnIsAnErrorWithTheBackendsMessage() async throws {
        let harness = AgentHarness(ScriptedBackend(.init(turn: [
            .turnCompleted(session: "s1", turn: "t1", outcome: .failed, error: "APIError: rate limited"),
        ])))
        try await harness.openSession()
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#)
        let answer = try #require(await harness.response(2))
        #expect(answer["error"]?["message"] == "the turn failed: APIError: rate limited")
        harness.input.finish()
        await harness.served.value
    }

    /// `cancelled` is the answer to the editor's session/cancel only: a turn the backend ended
    /// cancelled for its own reasons (OpenCode 2 ends an execution whose permission was
    /// rejected; another client aborted it) is an end_turn to this editor.
    @Test func aTurnCancelledByTheBackendAloneIsAnEndTurn() async throws {
        let harness = AgentHarness(ScriptedBackend(.init(turn: [
            .turnCompleted(session: "s1", turn: "t1", outcome: .cancelled),
        ])))
        try await harness.openSession()
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#)
        let answer = try #require(await harness.response(2))
        #expect(answer["result"]?["stopReason"] == "end_turn")
        harness.input.finish()
        await harness.served.value
    }

    @Test func cancelAbortsAndAnswersCancelledEvenWhenTheBackendNeverEndsTheTurn() async throws {
        let backend = ScriptedBackend(.init(turn: [.turnStarted(session: "s1", turn: "t1")], hang: true))
        let harness = AgentHarness(backend, cancelGrace: .milliseconds(200))
        try await harness.openSession()
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#)
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        harness.send(#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#)
        let answer = try #require(await harness.response(2))
        #expect(answer["result"]?["stopReason"] == "cancelled")
        #expect(ContinuousClock.now - start < .seconds(2))
        // The turn is aborted by its id. A cancel that overtakes the backend's `turn.started`
        // (a loaded machine) first aborts the session's turn unnamed, then again once it is named.
        let aborted = backend.state.withLock { $0.aborted }
        #expect(aborted.last == "t1")
        #expect(aborted == ["t1"] || aborted == [nil, "t1"])
        harness.input.finish()
        await harness.served.value
    }

    /// An editor writes the prompt and its cancel back to back: the cancel is read before the
    /// prompt's task has run at all, and must still apply to it.
    @Test func aCancelRightBehindItsPromptCancelsIt() async throws {
        let backend = ScriptedBackend(.init(turn: aTurn))
        let harness = AgentHarness(backend)
        try await harness.openSession()
        await harness.sendTogether(promptLine(2), cancelLine)
        let answer = try #require(await harness.response(2))
        #expect(answer["result"]?["stopReason"] == "cancelled")
        // Cancelled before it was sent: no turn to start, none to abort.
        #expect(backend.state.withLock { $0.sent } == 0)
        #expect(backend.state.withLock { $0.aborted }.isEmpty)
        harness.input.finish()
        await harness.served.value
    }

    @Test func aCancelWithNoPromptRunningIsForgotten() async throws {
        let backend = ScriptedBackend(.init(turn: aTurn))
        let harness = AgentHarness(backend)
        try await harness.openSession()
        harness.send(cancelLine)
        harness.send(promptLine(2))
        let answer = try #require(await harness.response(2))
        #expect(answer["result"]?["stopReason"] == "end_turn")
        #expect(backend.state.withLock { $0.aborted }.isEmpty)
        harness.input.finish()
        await harness.served.value
    }

    /// Prompt A is cancelled and ends at once; prompt B of the same session is cancelled a little
    /// later, and its backend takes its time. A's grace timer must not cut B short: B answers
    /// after its turn's last update.
    @Test func anEarlierPromptsCancelGraceDoesNotEndALaterPrompt() async throws {
        let backend = ScriptedBackend(.init(turn: [.turnStarted(session: "s1", turn: "t1")], hang: true))
        let timers = GraceTimers()
        let log = CapturedLog()
        let harness = AgentHarness(backend, graceTimers: timers, log: log)
        try await harness.openSession()

        harness.send(promptLine(2))
        await harness.until { backend.state.withLock { $0.sent } == 1 }
        harness.send(cancelLine)
        await harness.until { timers.started == 1 }
        backend.endTurn([.turnCompleted(session: "s1", turn: "t1", outcome: .cancelled)])
        #expect(try #require(await harness.response(2))["result"]?["stopReason"] == "cancelled")

        harness.send(promptLine(3))
        await harness.until { backend.state.withLock { $0.sent } == 2 }
        harness.send(cancelLine)
        await harness.until { timers.started == 2 }
        timers.end(0)  // A's grace is over
        let stale = "the cancel grace of an earlier prompt of s1 is over"
        // Until the agent has dealt with A's timer (or, wrongly, has answered B).
        _ = await harness.wait { ($0["id"] == 3 && $0["method"] == nil) || log.contains(stale) }
        backend.endTurn([
            .partDelta(session: "s1", turn: "t1", part: "p1", kind: .text, delta: "last words"),
            .turnCompleted(session: "s1", turn: "t1", outcome: .cancelled),
        ])
        let answer = try #require(await harness.response(3))
        #expect(answer["result"]?["stopReason"] == "cancelled")
        let lines = harness.received.lines.withLock { $0 }
        let lastWords = lines.firstIndex { $0["params"]?["update"]?["content"]?["text"] == "last words" }
        let answered = lines.firstIndex { $0["id"] == 3 && $0["method"] == nil }
        #expect(lastWords != nil && lastWords! < answered!)
        timers.end(1)
        harness.input.finish()
        await harness.served.value
    }

    /// The editor counts its answer as given: a passing failure to send it is retried, and one
    /// that stays is said in the session, with how to answer instead.
    @Test(arguments: [true, false])
    func anAnswerThatCannotBeSentIsRetriedOrSaid(passing: Bool) async throws {
        let approval = Approval(id: "t1~a1", session: "s1", turn: "t1", kind: .command, title: "Run ls", command: "ls",
                                options: [.accept, .decline], risk: .low, extra: ["item": "c1"])
        var script = ScriptedBackend.State(turn: [.approvalRequested(approval)], hang: true)
        script.approveFailures = passing
            ? [TetherError(.unavailable, "the tunnel dropped", retryable: true)]
            : [TetherError(.failed, "the daemon refused it")]
        let backend = ScriptedBackend(script)
        let harness = AgentHarness(backend, shutdownGrace: .milliseconds(100))
        try await harness.openSession()
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#)
        let request = try #require(await harness.wait { $0["method"] == "session/request_permission" })
        let id = try #require(request["id"]?.int)
        harness.send(#"{"jsonrpc":"2.0","id":\#(id),"result":{"outcome":{"outcome":"selected","optionId":"accept"}}}"#)
        if passing {
            await harness.until { backend.state.withLock { !$0.approved.isEmpty } }
            #expect(backend.state.withLock { $0.approved.map { "\($0.0) \($0.1.rawValue)" } } == ["t1~a1 accept"])
        } else {
            let said = try #require(await harness.wait { $0["params"]?["update"]?["sessionUpdate"] == "agent_message_chunk" })
            let text = said["params"]?["update"]?["content"]?["text"]?.string ?? ""
            #expect(text.contains("did not reach the agent: the daemon refused it") && text.contains("tether -p p approve t1~a1 --decision accept"))
            #expect(backend.state.withLock { $0.approved.isEmpty })
        }
        harness.input.finish()
        await harness.served.value
    }

    @Test func theEditorsAnswerIsSentOnceAndALateOneAfterResolutionIsNot() async throws {
        let approval = Approval(id: "t1~a1", session: "s1", turn: "t1", kind: .command, title: "Run ls", command: "ls",
                                options: [.accept, .acceptForSession, .decline, .cancel], risk: .low, extra: ["item": "c1"])
        let backend = ScriptedBackend(.init(turn: [.approvalRequested(approval)], hang: true))
        // The turn never ends: EOF need not wait for it.
        let harness = AgentHarness(backend, shutdownGrace: .milliseconds(100))
        try await harness.openSession()
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#)
        let request = try #require(await harness.wait { $0["method"] == "session/request_permission" })
        let toolCall = try #require(await harness.wait { $0["params"]?["update"]?["sessionUpdate"] == "tool_call" })
        #expect(toolCall["params"]?["update"]?["toolCallId"] == "c1")
        let id = try #require(request["id"]?.int)
        harness.send(#"{"jsonrpc":"2.0","id":\#(id),"result":{"outcome":{"outcome":"selected","optionId":"accept_for_session"}}}"#)
        harness.send(#"{"jsonrpc":"2.0","id":\#(id),"result":{"outcome":{"outcome":"selected","optionId":"decline"}}}"#)
        await harness.until { backend.state.withLock { !$0.approved.isEmpty } }
        try await Task.sleep(for: .milliseconds(200))  // time for a second answer, were one sent
        let approved = backend.state.withLock { $0.approved.map { "\($0.0) \($0.1.rawValue)" } }
        #expect(approved == ["t1~a1 accept_for_session"])
        harness.input.finish()
        await harness.served.value
    }

    /// `printf '…session/list…' | tether acp`: the editor closes stdin right after its requests,
    /// and still gets their answers — a prompt's too, if its turn ends in time.
    @Test func eofAnswersTheRequestsAlreadyRead() async throws {
        let backend = ScriptedBackend(.init(turn: [.turnStarted(session: "s1", turn: "t1")], hang: true,
                                            listDelay: .milliseconds(300)))
        let harness = AgentHarness(backend, shutdownGrace: .seconds(30))
        try await harness.openSession()
        harness.send(promptLine(2))
        await harness.until { backend.state.withLock { $0.sent } == 1 }
        harness.send(#"{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}"#)
        harness.input.finish()
        backend.endTurn([.turnCompleted(session: "s1", turn: "t1", outcome: .completed)])
        await harness.served.value
        let lines = harness.received.lines.withLock { $0 }
        let prompt = lines.first { $0["id"] == 2 && $0["method"] == nil }
        let list = lines.first { $0["id"] == 3 && $0["method"] == nil }
        #expect(prompt?["result"]?["stopReason"] == "end_turn")
        #expect(list?["result"]?["sessions"]?[0]?["sessionId"] == "s1")
    }

    /// A turn that outlasts the EOF deadline goes on on the backend; its prompt is answered with
    /// an error that says so, and the process ends (within the contract's 5 s).
    @Test func eofAnswersAPromptStillRunningAtTheDeadlineAndLeavesItsTurnRunning() async throws {
        let backend = ScriptedBackend(.init(turn: [.turnStarted(session: "s1", turn: "t1")], hang: true))
        let harness = AgentHarness(backend, shutdownGrace: .milliseconds(200))
        try await harness.openSession()
        harness.send(promptLine(2))
        await harness.until { backend.state.withLock { $0.sent } == 1 }
        let start = ContinuousClock.now
        harness.input.finish()
        await harness.served.value
        #expect(ContinuousClock.now - start < .seconds(5))
        let answers = harness.received.lines.withLock { $0.filter { $0["id"] == 2 && $0["method"] == nil } }
        #expect(answers.count == 1)
        #expect(answers.first?["error"]?["message"] == "session/prompt did not finish before tether acp stopped (stdin closed); the turn goes on on the backend")
        #expect(backend.state.withLock { $0.aborted }.isEmpty)
    }

    @Test func loadingAnUnknownSessionSaysWhatFailed() async throws {
        let harness = AgentHarness(ScriptedBackend())
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"nope","cwd":"/p","mcpServers":[]}}"#)
        let answer = try #require(await harness.response(1))
        #expect(answer["error"]?["code"] == -32002)
        #expect(answer["error"]?["message"] == "loading session nope failed: thread nope not found — list them")
        harness.input.finish()
        await harness.served.value
    }
}
