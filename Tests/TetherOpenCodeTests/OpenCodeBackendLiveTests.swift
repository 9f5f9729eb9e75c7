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
}
