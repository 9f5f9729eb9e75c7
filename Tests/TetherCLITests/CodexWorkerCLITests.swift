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

    /// The worker answers 500 for a thread it does not know (codex cannot resume it): that is
    /// "not found" (exit 1, with what to do), not "the backend is unavailable" (exit 69).
    /// `sessions show` asks only the thread list (reading must not resume a thread).
    @Test(arguments: [["sessions", "show", "019a0000-0000-7000-8000-00000000dead"],
                      ["send", "019a0000-0000-7000-8000-00000000dead", "hello"]])
    func anUnknownThreadIsNotFound(command: [String]) async throws {
        try await withWorker { _, global, _ in
            let result = try await TetherProcess.run(command + global, environment: env)
            #expect(result.status == 1, "\(result.stderr)")
            let said = command[0] == "send" ? "no rollout found for thread id" : "lists no thread"
            #expect(result.stderr.contains(said), "\(result.stderr)")
            #expect(result.stderr.contains("tether --config \(global[1]) sessions list"), "\(result.stderr)")
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
            #expect(busy.stderr.contains("tether --config \(global[1]) events --turn job_"), "\(busy.stderr)")
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
            // Its hint's command carries --config (this config is not the default), in JSONL too.
            #expect(loss.data["hint"]?.string?.contains("tether --config \(global[1]) history") == true, "\(loss.data)")
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

    // MARK: A thread followed across its jobs

    /// The events a running process has printed so far, once `done` holds for them.
    func waitForEvents(_ process: TetherProcess, timeout: Duration = .seconds(30),
                       until done: ([Event]) -> Bool) async throws -> [Event] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let events = process.stdoutLines.compactMap { try? EventCodec.decode($0) }
            if done(events) { return events }
            guard ContinuousClock.now < deadline, process.isRunning else {
                throw TetherProcess.TimedOut(what: "the expected events", stdout: process.stdoutLines.joined(separator: "\n"),
                                             stderr: process.stderrText)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func historyLooks(_ simulator: CodexWorkerSimulator, _ thread: String) -> Int {
        simulator.requestLog.filter { $0.path == "/v1/threads/\(thread)/events" }.count
    }

    /// Another client runs six sub-second jobs back to back between two looks of the follower
    /// (it looks every 2 s): every one is streamed, whole, once, oldest first. Before, only the
    /// thread's last unfinished job was looked for, so all six went unseen.
    @Test func aThreadFollowedAcrossABurstOfShortJobsStreamsEachOnceInOrder() async throws {
        try await withWorker { simulator, global, thread in
            let follow = try TetherProcess(["events", "--session", thread, "--follow"] + global, environment: env)
            defer { follow.terminate() }
            _ = try await follow.waitForEvent(.sessionStatus)  // idle: the first look is done
            let looksBefore = historyLooks(simulator, thread)
            let jobs = try await simulator.runTurns(in: thread, prompts: (1...6).map { "quick \($0)" })
            #expect(historyLooks(simulator, thread) == looksBefore, "the burst was not between two looks")
            let events = try await waitForEvents(follow) { $0.filter { $0.type == .turnCompleted }.count >= 6 }
            try await Task.sleep(for: .milliseconds(300))
            let all = follow.stdoutLines.compactMap { try? EventCodec.decode($0) }
            #expect(all.filter { $0.type == .turnStarted }.compactMap(\.turn) == jobs)
            #expect(all.filter { $0.type == .turnCompleted }.compactMap(\.turn) == jobs)
            #expect(all.filter { $0.type == .turnCompleted }.allSatisfy { $0.data["status"] == "completed" })
            #expect(!all.contains { $0.type == .error })
            // Each job whole: its user prompt and its reply, in the job's order.
            let prompts = events.filter { $0.type == .partCompleted && $0.data["role"] == "user" }.compactMap { $0.data["text"]?.string }
            #expect(prompts == (1...6).map { "quick \($0)" })
            #expect(events.filter { $0.type == .partCompleted && $0.data["role"] == "assistant" }.count == 6)
            // And a job after the burst still streams.
            let later = try await simulator.runTurns(in: thread, prompts: ["one more"])
            let more = try await waitForEvents(follow) { $0.filter { $0.type == .turnCompleted }.count >= 7 }
            #expect(more.filter { $0.type == .turnCompleted }.compactMap(\.turn) == jobs + later)
        }
    }

    /// Jobs that ran between two looks and then vanished with a worker restart cannot be
    /// streamed: each is reported as a loss (`events_lost`, not retryable), once; the stream goes
    /// on with the next job.
    @Test func jobsWhoseEventsAreGoneAreReportedAsLosses() async throws {
        try await withWorker { simulator, global, thread in
            let follow = try TetherProcess(["events", "--session", thread, "--follow"] + global, environment: env)
            defer { follow.terminate() }
            _ = try await follow.waitForEvent(.sessionStatus)
            let looksBefore = historyLooks(simulator, thread)
            let lost = try await simulator.runTurns(in: thread, prompts: ["quick 1", "quick 2"])
            simulator.forgetJobs()  // a worker restart between two looks
            let after = try await simulator.runTurns(in: thread, prompts: ["after the restart"])
            #expect(historyLooks(simulator, thread) == looksBefore, "the jobs were not gone before the next look")
            let events = try await waitForEvents(follow) { events in
                events.filter { $0.type == .error }.count >= 2 && events.contains { $0.type == .turnCompleted }
            }
            let losses = events.filter { $0.type == .error }
            #expect(losses.count == 2)
            #expect(losses.allSatisfy { $0.data["code"] == "events_lost" && $0.data["retryable"] == false })
            #expect(losses.allSatisfy { $0.turn?.hasPrefix("hist_\(thread)_") == true })
            #expect(losses.allSatisfy { $0.data["message"]?.string?.contains("were lost") == true })
            #expect(!events.contains { $0.turn.map(lost.contains) == true })
            #expect(events.filter { $0.type == .turnCompleted }.compactMap(\.turn) == after)
        }
    }

    /// A Codex Worker simulator behind a `FaultProxy` (a profile with a short reconnect delay),
    /// and a thread made on it.
    func withWorkerBehindAProxy(_ body: (CodexWorkerSimulator, FaultProxy, [String], String) async throws -> Void) async throws {
        let simulator = CodexWorkerSimulator(options: .init(token: "t0ken"), logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() })
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let proxy = try FaultProxy(upstreamPort: try #require(url.port), framing: .sse)
        defer { proxy.stop() }
        let config = try TemporaryConfig("""
            [profiles.w]
            backend = "codex-worker"
            url = "http://127.0.0.1:\(proxy.port)"
            token = { env = "WORKER_TEST_TOKEN" }
            reconnect_delay = 0.2
            """)
        let global = ["--config", config.path, "-p", "w"]
        let thread = try await TetherProcess.createSession(global, environment: env, title: "e2e")
        try await body(simulator, proxy, global, thread)
    }

    /// The worker goes down just as a followed thread's next job is read (`GET /v1/jobs/{id}`,
    /// right after the look that found the job) and refuses connections for a second. The follow
    /// retries that job on the reconnect schedule, saying so, and goes on: every job streams
    /// whole, once, in order. Before, the failure escaped the step and the follow exited 69.
    @Test func aWorkerOutageBetweenTwoJobsOfAFollowedThreadLosesNothing() async throws {
        try await withWorkerBehindAProxy { simulator, proxy, global, thread in
            let follow = try TetherProcess(["events", "--session", thread, "--follow"] + global, environment: env)
            defer { follow.terminate() }
            _ = try await follow.waitForEvent(.sessionStatus)  // idle: the first look is done
            let first = try await simulator.runTurns(in: thread, prompts: ["quick 1"])
            _ = try await waitForEvents(follow) { $0.contains { $0.type == .turnCompleted } }

            // `GET /v1/jobs/{id}`, not `/v1/jobs/{id}/events` nor the thread's history.
            proxy.restart(downFor: .seconds(1)) { bytes in
                let line = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self).split(separator: " ")
                guard line.count == 3, line[0] == "GET", line[1].hasPrefix("/v1/jobs/") else { return false }
                return !line[1].dropFirst("/v1/jobs/".count).contains("/")
            }
            let second = try await simulator.runTurns(in: thread, prompts: ["quick 2"])
            _ = try await waitForEvents(follow, timeout: .seconds(60)) { $0.filter { $0.type == .turnCompleted }.count >= 2 }
            #expect(proxy.stats.restarts == 1, "the outage never happened")
            let third = try await simulator.runTurns(in: thread, prompts: ["quick 3"])
            let events = try await waitForEvents(follow, timeout: .seconds(60)) { $0.filter { $0.type == .turnCompleted }.count >= 3 }

            let reconnecting = events.filter { $0.type == .connectionState && $0.data["state"] == "reconnecting" }
            #expect(reconnecting.contains { $0.data["reason"]?.string?.contains("streaming job \(second[0])") == true },
                    "\(reconnecting.map { $0.data["reason"]?.string ?? "" })")
            let jobs = first + second + third
            #expect(events.filter { $0.type == .turnStarted }.compactMap(\.turn) == jobs)
            #expect(events.filter { $0.type == .turnCompleted }.compactMap(\.turn) == jobs)
            #expect(events.filter { $0.type == .turnCompleted }.allSatisfy { $0.data["status"] == "completed" })
            #expect(!events.contains { $0.type == .error })
            let prompts = events.filter { $0.type == .partCompleted && $0.data["role"] == "user" }.compactMap { $0.data["text"]?.string }
            #expect(prompts == ["quick 1", "quick 2", "quick 3"])
            // Each job's events in seq order, no delta twice, and its reply whole.
            for job in jobs {
                let seqs = events.compactMap(\.cursor).filter { $0.hasPrefix(job + ":") }.compactMap { Int($0.split(separator: ":").last!) }
                #expect(!seqs.isEmpty && seqs == seqs.sorted(), "\(job): \(seqs)")
                let deltas = events.filter { $0.type == .partDelta && $0.cursor?.hasPrefix(job + ":") == true }
                #expect(Set(deltas.compactMap(\.cursor)).count == deltas.count, "\(job): a delta came twice")
            }
            #expect(events.filter { $0.type == .partCompleted && $0.data["role"] == "assistant" }.count == 3)
            #expect(follow.isRunning, "\(follow.stderrText)")
        }
    }

    /// `events --turn JOB --follow` started while the worker is down for a moment (its first
    /// read, `GET /v1/jobs/{id}`, refused) retries on the reconnect schedule, saying so, and
    /// then streams the job whole; before, it exited 69 at once.
    @Test func followingAJobOutlastsAWorkerDownForAMoment() async throws {
        try await withWorkerBehindAProxy { simulator, proxy, global, thread in
            let job = try #require(try await simulator.runTurns(in: thread, prompts: ["quick 1"]).first)
            proxy.restart(downFor: .seconds(1)) { bytes in
                String(decoding: bytes.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self) == "GET /v1/jobs/\(job) HTTP/1.1"
            }
            let follow = try TetherProcess(["events", "--turn", job, "--follow"] + global, environment: env)
            defer { follow.terminate() }
            let events = try await waitForEvents(follow, timeout: .seconds(60)) { $0.contains { $0.type == .turnCompleted } }
            #expect(proxy.stats.restarts == 1, "the outage never happened")
            #expect(events.contains { $0.type == .connectionState && $0.data["reason"]?.string?.contains("streaming job \(job)") == true },
                    "\(follow.stderrText)")
            #expect(events.filter { $0.type == .turnCompleted }.map(\.turn) == [job])
            #expect(!events.contains { $0.type == .error })
        }
    }

    /// The worker goes down right after accepting the prompt, as `send --follow` first reads
    /// the job (`GET /v1/jobs/{id}`): the follow retries on the reconnect schedule, saying so,
    /// and streams the turn whole. Before, it exited 69 with the turn running on.
    @Test func sendFollowOutlastsAWorkerDownRightAfterThePost() async throws {
        try await withWorkerBehindAProxy { _, proxy, global, thread in
            proxy.restart(downFor: .seconds(1)) { bytes in
                let line = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self).split(separator: " ")
                guard line.count == 3, line[0] == "GET", line[1].hasPrefix("/v1/jobs/") else { return false }
                return !line[1].dropFirst("/v1/jobs/".count).contains("/")
            }
            let result = try await TetherProcess.run(["send", thread, "hello there", "--follow"] + global, environment: env,
                                                     timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(proxy.stats.restarts == 1, "the outage never happened")
            let events = try result.events()
            let job = try #require(events.first { $0.type == .turnStarted }?.turn)
            #expect(events.contains { $0.type == .connectionState && $0.data["reason"]?.string?.contains("streaming job \(job)") == true })
            #expect(events.filter { $0.type == .turnCompleted }.map(\.turn) == [job])
            #expect(finalText(events).first == "hello there")
            #expect(!events.contains { $0.type == .error })
        }
    }

    /// A worker without thread history (an older or differently configured one) cannot name a
    /// thread's jobs: `events --session --follow` says so once (an `error` event that is not
    /// retryable, and a note at -v) and stays open instead of exiting; `history` is a clear
    /// "unsupported" (64), and a job is still followed by its id.
    @Test func aWorkerWithoutThreadHistoryDegrades() async throws {
        try await withWorker(.init(token: "t0ken", lacks: [.threadHistory])) { simulator, global, thread in
            let follow = try TetherProcess(["events", "--session", thread, "--follow", "-v"] + global, environment: env)
            defer { follow.terminate() }
            let error = try await follow.waitForEvent(.error)
            #expect(error.data["code"] == "unsupported")
            #expect(error.data["retryable"] == false)
            #expect(error.data["message"]?.string?.contains("GET /v1/threads/{id}/events") == true)
            #expect(error.data["hint"]?.string?.contains("--turn") == true)
            // Another look (every 2 s) says nothing more, and the stream is still open.
            try await Task.sleep(for: .milliseconds(2500))
            #expect(follow.isRunning, "\(follow.stderrText)")
            #expect(follow.stdoutLines.filter { $0.contains("\"type\":\"error\"") }.count == 1)
            #expect(follow.stderrText.contains("no thread history"))
            #expect(historyLooks(simulator, thread) >= 2)

            let history = try await TetherProcess.run(["history", thread] + global, environment: env)
            #expect(history.status == 64, "\(history.stderr)")
            #expect(history.stderr.contains("does not have"))
            let sent = try await TetherProcess.run(["send", thread, "hello", "--follow"] + global, environment: env)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(try sent.events().last { $0.type == .turnCompleted }?.data["status"] == "completed")
        }
    }

    /// A worker without thread archive: `sessions list --archived` lists the active threads once
    /// (the worker ignores `archived`), and archiving is a clear "unsupported".
    @Test func aWorkerWithoutArchiveDegrades() async throws {
        try await withWorker(.init(token: "t0ken", lacks: [.archive])) { _, global, thread in
            #expect(try await TetherProcess.run(["send", thread, "hello", "--follow"] + global, environment: env).status == 0)
            let all = try await TetherProcess.run(["sessions", "list", "--archived"] + global, environment: env)
            #expect(all.status == 0, "\(all.stderr)")
            #expect(try all.events().filter { $0.session == thread }.count == 1)
            let archived = try await TetherProcess.run(["sessions", "archive", thread] + global, environment: env)
            #expect(archived.status == 64, "\(archived.stderr)")
            #expect(archived.stderr.contains("POST /v1/threads/{id}/archive"))
        }
    }
}
