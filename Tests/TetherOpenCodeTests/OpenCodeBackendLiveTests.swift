import Logging
import Testing
import TetherCore
import TetherSim
@testable import TetherOpenCode

/// The adapter in-process against the simulator, for behaviour that needs tuned timings.
@Suite struct OpenCodeBackendLiveTests {
    /// OpenCode issue #46733: connected, heartbeating, and silent while a session is busy. The
    /// adapter must not trust the silence: it polls REST and still delivers the turn whole.
    @Test func aStreamThatOnlyHeartbeatsIsPolledAndTheTurnStillCompletes() async throws {
        let simulator = OpenCodeSimulator(options: .init(heartbeatInterval: .milliseconds(100),
                                                         faults: .init(heartbeatsOnly: true)))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let backend = OpenCodeBackend(
            configuration: .init(baseURL: url.absoluteString, password: nil, directory: nil, profile: "t",
                                 liveness: .seconds(5), pollInterval: .milliseconds(300)),
            logger: Logger(label: "test"))
        let session = try await backend.createSession(SessionCreateRequest(title: "silent"))
        var events: [Event] = []
        for try await event in backend.sendAndFollow(SendRequest(session: session.id, text: "say hello")) {
            events.append(event)
        }
        let done = try #require(events.last { $0.type == .turnCompleted })
        #expect(done.data["status"] == "completed")
        let texts = events.filter { $0.type == .partCompleted && $0.data["role"] == "assistant" }.compactMap { $0.data["text"]?.string }
        #expect(!texts.isEmpty && texts.allSatisfy { !$0.isEmpty })
        // Nothing arrived over SSE but heartbeats: everything came from the REST polls.
        #expect(await simulator.openEventStreams() >= 0)
    }

    /// The server goes away between two REST reads of a resync: the session's messages were read,
    /// the permission list was not. Whatever the messages held must still be delivered by the next
    /// resync — the turn's start, the user's text, every part — exactly once.
    @Test func aResyncThatFailsHalfwayLosesNothing() async throws {
        let simulator = OpenCodeSimulator(options: .init(heartbeatInterval: .milliseconds(100),
                                                         faults: .init(heartbeatsOnly: true, failEverySecondPermissionList: true)))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let backend = OpenCodeBackend(
            configuration: .init(baseURL: url.absoluteString, password: nil, directory: nil, profile: "t",
                                 liveness: .seconds(5), pollInterval: .milliseconds(300),
                                 reconnect: .init(backoff: [.milliseconds(50)], jitter: 0)),
            logger: Logger(label: "test"))
        let session = try await backend.createSession(SessionCreateRequest(title: "flaky"))
        let events = try await Self.collect(backend.sendAndFollow(SendRequest(session: session.id, text: "say hello")),
                                            within: .seconds(30))

        // Every second read fails: two reads or more means the fault fired.
        let permissionReads = await simulator.requests().count { $0.method == "GET" && $0.path == "/permission" }
        #expect(permissionReads >= 2, "the fault never fired: \(permissionReads) permission reads")
        #expect(events.count { $0.type == .turnStarted } == 1)
        let done = try #require(events.last { $0.type == .turnCompleted }, "the turn never completed")
        #expect(done.data["status"] == "completed")
        let completed = events.filter { $0.type == .partCompleted }
        #expect(completed.contains { $0.data["role"] == "user" && $0.data["text"] == "say hello" })
        #expect(completed.contains { $0.data["role"] == "assistant" && !($0.data["text"]?.string ?? "").isEmpty })
        #expect(Set(completed.compactMap(\.part)).count == completed.count, "a part completed twice")
    }

    /// `send --follow` whose prompt POST answers 503. When the server never stored the prompt,
    /// it is posted again after the reconnect and its turn is followed to the end (before, the
    /// prompt counted as sent and the command waited forever). When the server stored it and
    /// only the answer was lost, the resync finds it and it is not posted twice.
    @Test(arguments: [OpenCodeSimulator.PromptFailure.beforeStoring, .afterStoring])
    func aPromptPostThatFailsIsPostedAgainOnlyIfTheServerLacksIt(_ failure: OpenCodeSimulator.PromptFailure) async throws {
        let simulator = OpenCodeSimulator(options: .init(faults: .init(failFirstPrompt: failure)))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let backend = OpenCodeBackend(
            configuration: .init(baseURL: url.absoluteString, password: nil, directory: nil, profile: "t",
                                 reconnect: .init(backoff: [.milliseconds(50)], jitter: 0)),
            logger: Logger(label: "test"))
        let session = try await backend.createSession(SessionCreateRequest(title: "flaky prompt"))
        let events = try await Self.collect(backend.sendAndFollow(SendRequest(session: session.id, text: "say hello")),
                                            within: .seconds(30))

        let posts = await simulator.requests().count { $0.method == "POST" && $0.path.hasSuffix("/prompt_async") }
        #expect(posts == (failure == .beforeStoring ? 2 : 1))
        let stored = try await backend.client.get("/session/\(session.id)/message").array ?? []
        #expect(OpenCodeStreamMachine.userMessages(stored).count == 1, "the prompt is in the session once")
        #expect(events.contains { $0.type == .connectionState && $0.data["state"] == "reconnecting" })
        #expect(events.count { $0.type == .turnStarted } == 1)
        let done = try #require(events.last { $0.type == .turnCompleted }, "the turn never completed")
        #expect(done.data["status"] == "completed")
        #expect(events.contains { $0.type == .partCompleted && $0.data["role"] == "user" && $0.data["text"] == "say hello" })
    }

    /// 2.x: the same, over `/api/*`. Not stored: posted again; stored with its answer lost: the
    /// session's durable log shows it admitted (`session.input.admitted` with its text after the
    /// watermark), so it is not posted twice, and its turn is followed by that input's id.
    @Test(arguments: [OpenCodeSimulator.PromptFailure.beforeStoring, .afterStoring])
    func a2xPromptPostThatFailsIsPostedAgainOnlyIfTheServerLacksIt(_ failure: OpenCodeSimulator.PromptFailure) async throws {
        var options = OpenCodeSimulator.Options(faults: .init(failFirstPrompt: failure))
        options.generation = 2
        let simulator = OpenCodeSimulator(options: options)
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let backend = OpenCodeBackend(
            configuration: .init(baseURL: url.absoluteString, password: simulator.currentPassword, directory: nil, profile: "t",
                                 reconnect: .init(backoff: [.milliseconds(50)], jitter: 0)),
            logger: Logger(label: "test"))
        let session = try await backend.createSession(SessionCreateRequest(title: "flaky prompt"))
        let events = try await Self.collect(backend.sendAndFollow(SendRequest(session: session.id, text: "say hello")),
                                            within: .seconds(30))

        let posts = await simulator.requests().count { $0.method == "POST" && $0.path.hasSuffix("/prompt") }
        #expect(posts == (failure == .beforeStoring ? 2 : 1))
        let history = try await backend.history(session: session.id, limit: nil)
        #expect(history.count { $0.type == .turnStarted } == 1, "the prompt is in the session once")
        #expect(events.contains { $0.type == .connectionState && $0.data["state"] == "reconnecting" })
        #expect(events.count { $0.type == .turnStarted } == 1)
        let done = try #require(events.last { $0.type == .turnCompleted }, "the turn never completed")
        #expect(done.data["status"] == "completed")
        #expect(events.contains { $0.type == .partCompleted && $0.data["role"] == "user" && $0.data["text"] == "say hello" })
    }

    /// 2.x lists its models at `GET /api/model`, as `provider/model`.
    @Test func a2xServerListsItsModels() async throws {
        var options = OpenCodeSimulator.Options(password: "pw")
        options.generation = 2
        let simulator = OpenCodeSimulator(options: options)
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let backend = OpenCodeBackend(configuration: .init(baseURL: url.absoluteString, password: "pw", directory: nil, profile: "t"),
                                      logger: Logger(label: "test"))
        let models = try await backend.listModels()
        #expect(models.map(\.id) == ["anthropic/claude-sonnet-4", "openai/gpt-5"])
        #expect(models.first?.name == "anthropic · Claude Sonnet 4")
        #expect(OpenCode2Facts.model(from: ["name": "no id"]) == nil)
    }

    /// The stream's events until it ends, or those so far once `limit` has passed (then the
    /// stream is cancelled): a run that never ends fails its expectations instead of hanging.
    static func collect(_ stream: EventStream, within limit: Duration) async throws -> [Event] {
        try await withThrowingTaskGroup(of: [Event]?.self) { group in
            group.addTask {
                var events: [Event] = []
                do {
                    for try await event in stream { events.append(event) }
                } catch is CancellationError {}
                return events
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            var collected: [Event] = []
            while let finished = try await group.next() {
                if let events = finished { collected = events }
                group.cancelAll()
            }
            return collected
        }
    }
}
