import Foundation

extension CodexWorkerSimulator {
    /// Another client starting turns in `threadId` back to back, as fast as the worker allows:
    /// each prompt is started as `POST /v1/threads/{tid}/turns` would start it, and the next one as
    /// soon as the previous job is terminal (the worker refuses a second active job with 409).
    /// With `pacing` zero each job lasts a few milliseconds, so a whole burst fits between two
    /// looks of a client that polls the thread. Returns the job ids, oldest first.
    public func runTurns(in threadId: String, prompts: [String], timeout: Duration = .seconds(30)) async throws -> [String] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var jobIds: [String] = []
        for prompt in prompts {
            let snapshot = try store.startTurn(threadId, ["text": .string(prompt)])
            guard let jobId = snapshot["jobId"]?.stringValue else { throw SimulatorError.timedOut("a turn without a jobId") }
            jobIds.append(jobId)
            while !store.isTerminal(jobId) {
                guard ContinuousClock.now < deadline else { throw SimulatorError.timedOut("job \(jobId) to finish") }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        return jobIds
    }
}
