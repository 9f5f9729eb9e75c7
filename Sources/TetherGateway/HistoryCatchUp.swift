import Logging
import TetherCore

/// Fills what a profile's live stream cannot: turns that ran while the gateway was down (or its
/// subscription was), read back from the backend's history when the subscription (re)starts.
/// Only `part.completed` and `turn.completed` are taken — they carry the whole content and the
/// duplicate rule keeps each once, whichever of history and the live stream brings it first;
/// deltas stay live-only. A profile with nothing logged yet starts clean, as the contract says.
struct HistoryCatchUp: Sendable {
    static let taken: Set<EventType> = [.partCompleted, .turnCompleted]
    /// Sessions updated this long before the last logged event are read too (clock skew, races).
    static let margin: Double = 5 * 60_000
    /// Turns read back per session.
    static let turnsPerSession = 20

    let profile: ServedProfile
    let log: EventLog
    let logger: Logger

    var applies: Bool { profile.backend.capabilities.isSuperset(of: [.sessions, .history]) }

    /// The events to record, oldest first.
    func missedEvents() async -> [Event] {
        guard applies else { return [] }
        do {
            guard let last = try log.lastTimestamp(profile: profile.name) else { return [] }
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
            if !(error is CancellationError) {
                logger.warning("cannot read history to fill a gap", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
            }
            return []
        }
    }
}
