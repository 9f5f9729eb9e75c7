import Testing

/// Polls `condition` until it holds; past `limit`, records that it timed out and returns (the
/// test's own expectations then say what was missing).
func waitUntil(within limit: Duration = .seconds(5), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { Issue.record("timed out"); return }
        try await Task.sleep(for: .milliseconds(2))
    }
}
