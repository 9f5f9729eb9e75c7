import Logging
import Synchronization
import TetherCore

/// Keeps one profile's live stream flowing into the journal for as long as the gateway runs,
/// restarting it with backoff whenever it ends or fails. The stream is the backend's
/// all-sessions `events(follow:)`, a notification backend's `watch()`, or — for a backend whose
/// events need a session (the Codex Worker) — one stream per session, found by polling the
/// session list.
struct ProfileSubscription: Sendable {
    let profile: ServedProfile
    let journal: EventJournal
    let logger: Logger
    /// How often the session list is read for a backend that streams per session.
    var pollInterval: Duration = .seconds(5)
    let sessionFollows: SessionFollows

    init(profile: ServedProfile, journal: EventJournal, logger: Logger) {
        self.profile = profile
        self.journal = journal
        self.logger = logger
        sessionFollows = SessionFollows()
    }

    /// Backends with no all-sessions stream: their `events` needs a session.
    var streamsPerSession: Bool { profile.kind == .codexWorker }

    func run() async {
        if streamsPerSession {
            await runPerSession()
        } else {
            await supervise(label: "all sessions") {
                if let notifications = profile.backend as? any NotificationBackend { return notifications.watch() }
                return profile.backend.events(EventsRequest(follow: true))
            }
        }
    }

    /// Reads `stream` into the journal, restarting it with backoff, until cancelled.
    private func supervise(label: String, _ makeStream: @Sendable () -> AsyncThrowingStream<Event, any Error>) async {
        var backoff = SubscriptionBackoff()
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let started = clock.now
            do {
                for try await event in makeStream() {
                    record(event)
                }
                logger.info("subscription ended; restarting", metadata: ["profile": "\(profile.name)", "stream": "\(label)"])
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("subscription failed; restarting", metadata: [
                    "profile": "\(profile.name)", "stream": "\(label)", "error": "\(error)",
                ])
                profile.noteConnection(["state": "reconnecting", "error": .string("\(error)")])
            }
            let delay = backoff.delay(afterStreamLasting: clock.now - started)
            do { try await Task.sleep(for: delay) } catch { return }
        }
    }

    func record(_ event: Event) {
        let stamped = profile.stamp(event)
        if stamped.type == .connectionState { profile.noteConnection(stamped.data) }
        do {
            try journal.record(stamped)
        } catch {
            logger.error("cannot append to the event log", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
        }
    }

    /// One supervised stream per session; the session list is read every `pollInterval`, and a
    /// session a turn was just started in is followed at once (`follow(session:)`).
    private func runPerSession() async {
        await withDiscardingTaskGroup { group in
            let (newSessions, continuation) = AsyncStream.makeStream(of: String.self)
            sessionFollows.attach(continuation)
            group.addTask {
                while !Task.isCancelled {
                    do {
                        for session in try await profile.backend.listSessions(SessionListRequest()) {
                            sessionFollows.request(session.id)
                        }
                        profile.noteConnection(["state": "connected"])
                    } catch {
                        if Task.isCancelled { return }
                        logger.warning("cannot list sessions", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
                        profile.noteConnection(["state": "reconnecting", "error": .string("\(error)")])
                    }
                    do { try await Task.sleep(for: pollInterval) } catch { return }
                }
            }
            for await session in newSessions {
                group.addTask {
                    await supervise(label: "session \(session)") {
                        profile.backend.events(EventsRequest(session: session, follow: true))
                    }
                }
            }
        }
    }
}

/// The sessions a per-session subscription follows: each is started once.
final class SessionFollows: Sendable {
    private struct State {
        var followed: Set<String> = []
        var continuation: AsyncStream<String>.Continuation?
        var waiting: [String] = []
    }
    private let state = Mutex(State())

    func attach(_ continuation: AsyncStream<String>.Continuation) {
        let waiting = state.withLock { state in
            state.continuation = continuation
            defer { state.waiting = [] }
            return state.waiting
        }
        for session in waiting { continuation.yield(session) }
    }

    /// Follows `session` unless it already is.
    func request(_ session: String) {
        let continuation = state.withLock { state -> AsyncStream<String>.Continuation? in
            guard state.followed.insert(session).inserted else { return nil }
            if state.continuation == nil { state.waiting.append(session) }
            return state.continuation
        }
        continuation?.yield(session)
    }
}
