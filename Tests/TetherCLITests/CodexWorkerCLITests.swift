import Foundation
import Logging
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// The real binary against the Codex Worker simulator on loopback.
@Suite(.serialized) struct CodexWorkerCLITests {
    let env = ["WORKER_TEST_TOKEN": "t0ken"]

    func withWorker(_ options: CodexWorkerSimulator.Options = .init(token: "t0ken"),
                    _ body: (CodexWorkerSimulator, [String], String) async throws -> Void) async throws {
        let simulator = CodexWorkerSimulator(options: options, logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() })
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.w]
            backend = "codex-worker"
            url = "\(url.absoluteString)"
            token = { env = "WORKER_TEST_TOKEN" }
            """)
        let global = ["--config", config.path, "-p", "w"]
        let thread = try await TetherProcess.createSession(global, environment: env, title: "e2e")
        try await body(simulator, global, thread)
    }

    func finalText(_ events: [Event]) -> [String] {
        events.filter { $0.type == .partCompleted && $0.data["kind"] == "text" }.compactMap { $0.data["text"]?.string }
    }

    @Test func aPlainTurnStreamsToCompletion() async throws {
        try await withWorker { _, global, thread in
            let result = try await TetherProcess.run(["send", thread, "hello there", "--follow"] + global, environment: env)
            #expect(result.status == 0, "\(result.stderr)")
            let events = try result.events()
            let job = try #require(events.first { $0.type == .turnStarted }?.turn)
            #expect(job.hasPrefix("job_"))
            #expect(events.last { $0.type == .turnCompleted }?.data["status"] == "completed")
            #expect(finalText(events).first == "hello there")
            // Deltas assemble to each message's final text, and every envelope event has job:seq.
            for part in events.filter({ $0.type == .partCompleted && $0.data["role"] == "assistant" }) {
                let deltas = events.filter { $0.type == .partDelta && $0.part == part.part }.compactMap { $0.data["delta"]?.string }.joined()
                #expect(deltas == part.data["text"]?.string)
            }
            #expect(events.filter { $0.type != .connectionState }.allSatisfy { $0.cursor?.hasPrefix(job + ":") ?? false })
        }
    }

    @Test(arguments: [
        (["--decision", "accept"], "accept", "completed"),
        (["--decision", "accept_for_session"], "accept_for_session", "completed"),
        (["--decision", "accept_with_amendment", "--amendment", "swift", "build"], "accept_with_amendment", "completed"),
        (["--decision", "decline"], "decline", "declined"),
        (["--decision", "cancel"], "cancel", "declined"),
    ])
    func eachDecision(arguments: [String], decision: String, commandStatus: String) async throws {
        try await withWorker { _, global, thread in
            let send = try TetherProcess(["send", thread, "run the build", "--follow"] + global, environment: env)
            let approval = try await send.waitForEvent(.approvalRequested)
            let id = try #require(approval.data["id"]?.string)
            #expect(approval.data["kind"] == "command")
            let approve = try await TetherProcess.run(["approve", id] + arguments + global, environment: env)
            #expect(approve.status == 0, "\(approve.stderr)")
            let result = try await send.finish()
            let events = try result.events()
            #expect(events.first { $0.type == .approvalResolved }?.data["decision"]?.string == decision)
            let command = events.last { $0.type == .partCompleted && $0.data["kind"] == "command" }
            #expect(command?.data["status"]?.string == commandStatus)
            let outcome = events.last { $0.type == .turnCompleted }?.data["status"]?.string
            #expect(outcome == (decision == "cancel" ? "cancelled" : "completed"))
            #expect(result.status == (decision == "cancel" ? 1 : 0))
        }
    }

    @Test func anAmendmentOnAFileChangeIsRefusedByTheWorker() async throws {
        try await withWorker { _, global, thread in
            let send = try TetherProcess(["send", thread, "edit the file", "--follow"] + global, environment: env)
            let approval = try await send.waitForEvent(.approvalRequested)
            #expect(approval.data["kind"] == "file_change")
            let id = try #require(approval.data["id"]?.string)
            let refused = try await TetherProcess.run(["approve", id, "--decision", "accept_with_amendment", "--amendment", "x"] + global, environment: env)
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("INVALID_DECISION_FOR_KIND"))
            #expect(try await TetherProcess.run(["approve", id] + global, environment: env).status == 0)
            #expect(try await send.finish().status == 0)
        }
    }

    @Test func abortWhileWaitingForApprovalCancels() async throws {
        try await withWorker { _, global, thread in
            let send = try TetherProcess(["send", thread, "run the build", "--follow"] + global, environment: env)
            _ = try await send.waitForEvent(.approvalRequested)
            let busy = try await TetherProcess.run(["send", thread, "and another thing"] + global, environment: env)
            #expect(busy.status == 1)
            #expect(busy.stderr.contains("THREAD_HAS_ACTIVE_JOB"))
            #expect(busy.stderr.contains("tether events --turn job_"))
            let abort = try await TetherProcess.run(["abort", thread] + global, environment: env)
            #expect(abort.status == 0, "\(abort.stderr)")
            let result = try await send.finish()
            #expect(result.status == 1)
            #expect(try result.events().last { $0.type == .turnCompleted }?.data["status"] == "cancelled")
        }
    }

    @Test func aDroppedStreamResumesWithoutLossOrDuplicates() async throws {
        try await withWorker(.init(token: "t0ken", pacing: .milliseconds(10), dropStreamAfter: 15, dropStreamRepeats: true)) { _, global, thread in
            let result = try await TetherProcess.run(["send", thread, "long 40", "--follow"] + global, environment: env, timeout: .seconds(120))
            #expect(result.status == 0, "\(result.stderr)")
            let events = try result.events()
            #expect(events.filter { $0.type == .connectionState && $0.data["state"] == "reconnecting" }.count >= 2)
            let seqs = events.compactMap(\.cursor).compactMap { Int($0.split(separator: ":").last!) }
            #expect(seqs == seqs.sorted())
            let deltas = events.filter { $0.type == .partDelta }
            #expect(Set(deltas.compactMap(\.cursor)).count == deltas.count)
            #expect(deltas.count == 40)
            let message = try #require(events.last { $0.type == .partCompleted && $0.data["role"] == "assistant" })
            #expect(deltas.compactMap { $0.data["delta"]?.string }.joined() == message.data["text"]?.string)
        }
    }

    @Test func anExpiredCursorIsReportedAsALoss() async throws {
        try await withWorker(.init(token: "t0ken", retention: 10)) { _, global, thread in
            let sent = try await TetherProcess.run(["send", thread, "long 30", "--follow"] + global, environment: env, timeout: .seconds(60))
            let job = try #require(try sent.events().first { $0.type == .turnStarted }?.turn)
            let replay = try await TetherProcess.run(["events", "--since", "\(job):2"] + global, environment: env)
            #expect(replay.status == 0, "\(replay.stderr)")
            let events = try replay.events()
            let loss = try #require(events.first { $0.type == .error })
            #expect(loss.data["code"] == "events_lost")
            #expect(loss.data["message"]?.string?.contains("were lost") == true)
            #expect(events.last?.type == .turnCompleted)
        }
    }

    /// Joining a busy job late: the worker keeps 10 events and appends 5,000 a second, faster
    /// than any "read firstSeq, then resume from it" round trip. What was trimmed is reported
    /// once, exactly, and everything after it arrives.
    @Test func joiningABusyJobLateLosesOnlyWhatWasTrimmedBeforeTheJoin() async throws {
        try await withWorker(.init(token: "t0ken", retention: 10, pacing: .microseconds(200))) { _, global, thread in
            let started = try await TetherProcess.run(["send", thread, "long 3000"] + global, environment: env)
            #expect(started.status == 0, "\(started.stderr)")
            let job = try #require(try started.events().compactMap(\.turn).first, "\(started.stdout)")
            try await Task.sleep(for: .milliseconds(100))
            let follow = try await TetherProcess.run(["events", "--turn", job, "--follow"] + global, environment: env, timeout: .seconds(60))
            #expect(follow.status == 0, "\(follow.stderr)")
            let events = try follow.events()
            let losses = events.filter { $0.type == .error }
            #expect(losses.count == 1, "\(losses.map { $0.data["message"]?.string ?? "" })")
            let message = losses.first?.data["message"]?.string ?? ""
            #expect(losses.first?.data["code"] == "events_lost")
            // "N events of job J were lost (seq 0…N-1)": the next event is seq N, and from there
            // on nothing is missing — the reply's deltas run without a gap to the last one.
            let count = Int(message.prefix { $0.isNumber })
            let lost = try #require(count, "\(message)")
            #expect(message.contains(lost == 1 ? "(seq 0)" : "(seq 0…\(lost - 1))"))
            let firstCursor = events.first { $0.cursor != nil }?.cursor
            #expect(firstCursor == "\(job):\(lost)")
            let tokens = events.filter { $0.type == .partDelta }.compactMap { $0.data["delta"]?.string }
            let firstToken = tokens.first.flatMap { Int($0.dropFirst("token".count).dropLast()) }
            let first = try #require(firstToken, "\(tokens.prefix(3))")
            let expected = (first..<3000).map { "token\($0) " }
            #expect(tokens == expected, "\(tokens.count) deltas from token\(first)")
            #expect(events.last?.type == .turnCompleted)
        }
    }

    @Test func archiveAndUnarchiveAThread() async throws {
        try await withWorker { _, global, thread in
            // The worker lists a thread only once it has had a turn.
            #expect(try await TetherProcess.run(["send", thread, "hello", "--follow"] + global, environment: env).status == 0)
            let archived = try await TetherProcess.run(["sessions", "archive", thread] + global, environment: env)
            #expect(archived.status == 0, "\(archived.stderr)")
            #expect(try archived.events().first?.data["archived"] == true)
            let active = try await TetherProcess.run(["sessions", "list"] + global, environment: env)
            #expect(try !active.events().contains { $0.session == thread })
            let all = try await TetherProcess.run(["sessions", "list", "--archived"] + global, environment: env)
            #expect(try all.events().contains { $0.session == thread && $0.data["archived"] == true })
            #expect(try await TetherProcess.run(["sessions", "unarchive", thread] + global, environment: env).status == 0)
            let back = try await TetherProcess.run(["sessions", "list"] + global, environment: env)
            #expect(try back.events().contains { $0.session == thread })
        }
    }

    @Test func aWrongTokenExits77() async throws {
        try await withWorker { _, global, _ in
            let result = try await TetherProcess.run(["sessions", "list"] + global, environment: ["WORKER_TEST_TOKEN": "nope"])
            #expect(result.status == 77)
            #expect(result.stderr.contains("profiles.w.token"))
            #expect(!result.stderr.contains("nope"))
        }
    }

    @Test func historyPagesThroughEveryTurn() async throws {
        try await withWorker { _, global, thread in
            // Enough turns that the thread's history spans several 200-event pages.
            for index in 0..<70 {
                let result = try await TetherProcess.run(["send", thread, "turn \(index)", "--follow"] + global, environment: env)
                #expect(result.status == 0)
            }
            let history = try await TetherProcess.run(["history", thread] + global, environment: env)
            #expect(history.status == 0, "\(history.stderr)")
            let events = try history.events()
            #expect(events.filter { $0.type == .turnCompleted }.count == 70)
            let prompts = events.filter { $0.type == .partCompleted && $0.data["role"] == "user" }.compactMap { $0.data["text"]?.string }
            #expect(prompts == (0..<70).map { "turn \($0)" })
            let limited = try await TetherProcess.run(["history", thread, "--limit", "3"] + global, environment: env)
            #expect(try limited.events().filter { $0.type == .turnCompleted }.count == 3)
        }
    }

    /// A running job is in its thread's history with every retained event; when it ends they
    /// collapse into a few items, and a reader between two pages gets 409 THREAD_CURSOR_EXPIRED.
    /// The history is then read again from the start instead of failing.
    @Test func aHistoryThatShrinksWhileItIsReadIsReadAgain() async throws {
        let options = CodexWorkerSimulator.Options(token: "t0ken", retention: 5000, pacing: .milliseconds(1), historyShrinksOnce: true)
        try await withWorker(options) { simulator, global, thread in
            let started = try await TetherProcess.run(["send", thread, "long 20000"] + global, environment: env)
            #expect(started.status == 0, "\(started.stderr)")
            // Past one 200-event page of history.
            try await Task.sleep(for: .seconds(1))
            let history = try await TetherProcess.run(["history", thread] + global, environment: env)
            #expect(history.status == 0, "\(history.stderr)")
            let expired = simulator.requestLog.filter { $0.status == 409 && $0.path.hasSuffix("/events") }
            #expect(expired.count == 1, "the fault did not fire: \(expired.count) 409s")
            let prompt = try history.events().first { $0.type == .partCompleted && $0.data["role"] == "user" }
            #expect(prompt?.data["text"] == "long 20000")
        }
    }
}
