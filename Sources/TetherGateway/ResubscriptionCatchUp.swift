import Logging
import TetherCore

/// Fills what a profile's live stream cannot, when its subscription (re)starts: the approvals
/// pending now (requested while nothing listened), and turns that ran meanwhile, read back from
/// the backend's history. Of history only `part.completed` and `turn.completed` are taken — they
/// carry the whole content and the duplicate rule keeps each once, whichever of history and the
/// live stream brings it first; deltas stay live-only. A profile with nothing logged yet starts
/// clean, as the contract says.
struct ResubscriptionCatchUp: Sendable {
    static let taken: Set<EventType> = [.partCompleted, .turnCompleted]
    /// Sessions updated this long before the last logged event are read too (clock skew, races).
    static let margin: Double = 5 * 60_000
    /// Turns read back per session.
    static let turnsPerSession = 20

    let profile: ServedProfile
    let log: any EventStore
    let logger: Logger

    /// The events to record, oldest first.
    func missedEvents() async -> [Event] {
        await pendingApprovals() + missedTurns()
    }

    func pendingApprovals() async -> [Event] {
        guard profile.backend.capabilities.contains(.approvals) else { return [] }
        do {
            return try await profile.backend.pendingApprovals(session: nil).map { .approvalRequested($0) }
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot read pending approvals", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
            }
            return []
        }
    }

    func missedTurns() async -> [Event] {
        guard profile.backend.capabilities.isSuperset(of: [.sessions, .history]) else { return [] }
        do {
            guard let last = try await log.lastTimestamp(profile: profile.name) else { return [] }
            let since = last - Self.margin
            let sessions = try await profile.backend.listSessions(SessionListRequest())
            var events: [Event] = []
            for session in sessions where (session.updatedAt ?? .infinity) >= since {
                let history = try await profile.backend.history(session: session.id, limit: Self.turnsPerSession)
                events += history.filter { Self.taken.contains($0.type) }.map { event in
                    var event = event
                    if event.session == nil { event.session = session.id }
                    return event
                }
            }
            return events
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot read history to fill a gap", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
            }
            return []
        }
    }
}
