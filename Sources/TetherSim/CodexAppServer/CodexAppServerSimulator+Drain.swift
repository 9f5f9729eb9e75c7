/// SIGTERM on a ws server (note §6d): the server keeps serving, but `thread/start`, `turn/start`
/// and `thread/resume` get `serverShuttingDown`; it is done once no turn runs (a turn waiting
/// for approval holds it up forever, as in codex).
extension CodexAppServerSimulator {
    public func beginDrain() {
        state.withLock { $0.draining = true }
        checkDrained()
    }

    /// Returns once draining and no turn runs.
    public func waitUntilDrained() async {
        await drained.wait()
    }

    func checkDrained() {
        let done = state.withLock { state in state.draining && !state.threads.values.contains { $0.active != nil } }
        if done { drained.fire() }
    }
}
