import Synchronization

/// What a per-session subscription follows: each session once, and each job the gateway started.
final class SessionFollows: Sendable {
    enum Follow: Sendable {
        case session(String)
        case job(session: String, job: String)
    }

    private struct State {
        var sessions: Set<String> = []
        var jobs: Set<String> = []
        var continuation: AsyncStream<Follow>.Continuation?
        var waiting: [Follow] = []
    }
    private let state = Mutex(State())

    func attach(_ continuation: AsyncStream<Follow>.Continuation) {
        let waiting = state.withLock { state in
            state.continuation = continuation
            defer { state.waiting = [] }
            return state.waiting
        }
        for follow in waiting { continuation.yield(follow) }
    }

    private func send(_ follow: Follow, _ state: inout State) -> AsyncStream<Follow>.Continuation? {
        if state.continuation == nil { state.waiting.append(follow) }
        return state.continuation
    }

    /// Follows `session` unless it already is.
    func request(_ session: String) {
        let continuation = state.withLock { state -> AsyncStream<Follow>.Continuation? in
            guard state.sessions.insert(session).inserted else { return nil }
            return send(.session(session), &state)
        }
        continuation?.yield(.session(session))
    }

    /// Follows a job the gateway started, from its first event to its end.
    func follow(job: String, session: String) {
        let continuation = state.withLock { state -> AsyncStream<Follow>.Continuation? in
            guard state.jobs.insert(job).inserted else { return nil }
            return send(.job(session: session, job: job), &state)
        }
        continuation?.yield(.job(session: session, job: job))
    }

    /// Whether a job has a follower of its own (its id stays here after it ended: the session
    /// stream has nothing of it to add).
    func ownsJob(_ job: String) -> Bool { state.withLock { $0.jobs.contains(job) } }
}
