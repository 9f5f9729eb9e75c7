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
            async let caughtUp: Void = catchUp()
            await runPerSession()
            await caughtUp
        } else if profile.kind == .gateway {
            // Another gateway's log: each (re)start resumes after the last seq logged from it
            // (from its oldest kept event the first time), so nothing needs reading back.
            await supervise(label: "the gateway's log") {
                let since = (try? await journal.log.lastCursor(profile: profile.name)) ?? nil
                return profile.backend.events(EventsRequest(since: since ?? "0", follow: true, raw: false))
            }
        } else {
            await supervise(label: "all sessions", catchingUp: true) {
                if let notifications = profile.backend as? any NotificationBackend { return notifications.watch() }
                return profile.backend.events(EventsRequest(follow: true, raw: false))
            }
        }
    }

    /// Reads `stream` into the journal, restarting it with backoff, until cancelled — or, with
    /// `untilDone`, until a stream ends on its own (a job followed to its end).
    private func supervise(label: String, untilDone: Bool = false, owner: String? = nil, catchingUp: Bool = false,
                           _ makeStream: @Sendable () async -> EventStream) async {
        var backoff = SubscriptionBackoff()
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let started = clock.now
            // Each (re)start: what ran while nothing listened comes back from history meanwhile.
            let catchUp = catchingUp ? Task { await self.catchUp() } : nil
            defer { catchUp?.cancel() }
            do {
                // The stream's batches are the log's transactions: one commit for what arrived together.
                for try await batch in await makeStream().batches {
                    await record(batch, owner: owner)
                }
                if untilDone { return }
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

    /// Appends one event. `owner` is the job a job follower follows; a session follower's events
    /// of a job that has its own follower are dropped, so the job's deltas are not logged twice.
    func record(_ event: Event, owner: String? = nil) async {
        await record([event], owner: owner)
    }

    /// Appends a stream's batch, in one transaction.
    func record(_ events: [Event], owner: String? = nil) async {
        let stamped = events.compactMap { event -> Event? in
            if owner == nil, let turn = event.turn, sessionFollows.ownsJob(turn) { return nil }
            let stamped = profile.stamp(event)
            if stamped.type == .connectionState { profile.noteConnection(stamped.data) }
            return stamped
        }
        guard !stamped.isEmpty else { return }
        do {
            try await journal.record(stamped)
        } catch {
            logger.error("cannot append to the event log", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
        }
    }

    /// Records the last turns' part.completed / turn.completed of one session (the log keeps each once).
    func readBack(session: String) async {
        guard profile.backend.capabilities.contains(.history) else { return }
        do {
            let events = try await profile.backend.history(session: session, limit: 3)
            for var event in events where ResubscriptionCatchUp.taken.contains(event.type) {
                if event.session == nil { event.session = session }
                await record(event)
            }
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot read a session's history", metadata: ["profile": "\(profile.name)", "session": "\(session)", "error": "\(error)"])
            }
        }
    }

    /// Records the pending approvals and the part.completed / turn.completed that history has and
    /// the log lacks.
    func catchUp() async {
        let events = await ResubscriptionCatchUp(profile: profile, log: journal.log, logger: logger).missedEvents()
        for event in events where !Task.isCancelled { await record(event) }
    }

    /// One supervised stream per session; the session list is read every `pollInterval`. A turn
    /// the gateway starts is followed by its job id from its first event (a session stream looks
    /// for the next job only every few seconds and can miss a short one).
    private func runPerSession() async {
        await withDiscardingTaskGroup { group in
            let (follows, continuation) = AsyncStream.makeStream(of: SessionFollows.Follow.self)
            sessionFollows.attach(continuation)
            group.addTask {
                var updated: [String: Double?] = [:]
                var firstPoll = true
                while !Task.isCancelled {
                    do {
                        for session in try await profile.backend.listSessions(SessionListRequest()) {
                            sessionFollows.request(session.id)
                            // A session that appeared or changed since the last poll may have run a
                            // job too short for its stream to catch: its history has the whole of it.
                            // (The first poll's are the start-up catch-up's.)
                            if !firstPoll, updated[session.id] != .some(session.updatedAt) { await readBack(session: session.id) }
                            updated[session.id] = .some(session.updatedAt)
                        }
                        firstPoll = false
                        profile.noteConnection(["state": "connected"])
                    } catch {
                        if Task.isCancelled { return }
                        logger.warning("cannot list sessions", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
                        profile.noteConnection(["state": "reconnecting", "error": .string("\(error)")])
                    }
                    do { try await Task.sleep(for: pollInterval) } catch { return }
                }
            }
            for await follow in follows {
                switch follow {
                case .session(let session):
                    group.addTask {
                        await supervise(label: "session \(session)") {
                            profile.backend.events(EventsRequest(session: session, follow: true, raw: false))
                        }
                    }
                case .job(let session, let job):
                    group.addTask {
                        await supervise(label: "job \(job)", untilDone: true, owner: job) {
                            profile.backend.events(EventsRequest(session: session, turn: job, follow: true, untilTurnCompletes: true, raw: false))
                        }
                    }
                }
            }
        }
    }
}
