import Testing
@testable import TetherSim

/// `Pacer` spaces scripted events to deadlines. Only lower bounds are checked (a sleep never ends
/// early), so these hold on a loaded machine; the rate itself is the soak benchmark's to show.
@Suite("Simulator pacing")
struct PacerTests {
    @Test("n pauses take at least n intervals, sub-millisecond ones too")
    func pausesKeepTheInterval() async throws {
        let pacer = Pacer(interval: .microseconds(200))
        let start = ContinuousClock.now
        for _ in 0..<500 { try await pacer.pause() }
        #expect(ContinuousClock.now - start >= .milliseconds(100))
    }

    @Test("after a long wait the schedule starts afresh instead of bursting to catch up")
    func longWaitDoesNotBurst() async throws {
        let pacer = Pacer(interval: .milliseconds(5))
        try await pacer.pause()
        try await Task.sleep(for: .milliseconds(200))
        let resumed = ContinuousClock.now
        for _ in 0..<10 { try await pacer.pause() }
        #expect(ContinuousClock.now - resumed >= .milliseconds(50))
    }

    @Test("a zero interval only yields, and a cancelled script stops at its next pause")
    func zeroIntervalAndCancellation() async throws {
        let pacer = Pacer(interval: .zero)
        try await pacer.pause()
        let slow = Pacer(interval: .seconds(30))
        let task = Task { try await slow.pause() }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
