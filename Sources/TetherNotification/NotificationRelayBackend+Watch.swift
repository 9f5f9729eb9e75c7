import Foundation
import TetherCore
import TetherNet
import TetherStreaming

/// `notifications watch` (and `events --follow`): a long-lived registration under the stable
/// peer id, turning `notification.received` pushes — both envelope families, payload object or
/// string, replays from the relay's offline queue included — into `notification.received`
/// events, each notification once (the last 4,096 ids are remembered; the iOS client keeps 256).
/// The link is kept alive with pings; a dropped one reconnects with backoff and jitter, and
/// every (re)connection sends what waits in the offline queue.
///
/// A push the relay wrote into a connection that then died is gone from the relay, but not from
/// the desktop's history. Before registering, the watch reads the newest history page over a
/// one-shot registration: that is the baseline (not news). Each reconnection then pages back
/// through the history until it reaches rows older than the last point it knows complete, and
/// shows what was pushed to mobile and not shown yet, oldest first. Best effort: a desktop that
/// does not answer `notification.*` just gets no resync.
extension NotificationRelayBackend {
    public func watch() -> EventStream {
        EventChannel.stream { output in
            do {
                try await surface { try await runWatch(output) }
            } catch is CancellationError {
                // The consumer went away: the end, not a failure.
            }
        }
    }

    private func runWatch(_ output: EventChannel) async throws {
        let peerID = try stablePeerID()
        let endpoint = configuration.url
        var policy = ReconnectPolicy(configuration: configuration.reconnect)
        let ledger = NotificationWatchLedger()
        try await output.send(.connection(.connecting, attempt: 1, endpoint: endpoint))
        // Read before our registration exists, so a push made after it can never hide in the baseline.
        if let page = try? await withDesktop({ session, desktop in try await historyPage(0, session: session, desktop: desktop) }) {
            await ledger.setBaseline(page)
        }
        while !Task.isCancelled {
            policy.connecting()
            let reason: String
            do {
                let session = try await openSession(peerID: peerID, longLived: true)
                policy.connected(at: .now)
                // Registered: the relay answered, so the next drop is a fresh failure (the
                // schedule starts over), as a stream that delivered data is.
                policy.madeProgress()
                try await output.send(.connection(.connected, endpoint: endpoint))
                reason = try await pump(session, into: output, ledger: ledger)
            } catch let unreachable as DesktopUnreachable {
                reason = unreachable.error.message
            }
            if Task.isCancelled { return }
            switch policy.failed(.transportError, at: .now) {
            case .reconnect(let delay, let attempt):
                try await output.send(.connection(.reconnecting, attempt: attempt, endpoint: endpoint,
                                                  reason: "\(reason); retrying in \(delay.secondsText)"))
                try await Task.sleep(for: delay)
            case .stop(let stop):
                throw TetherError(.unavailable, "gave up on the signaling relay at \(endpoint) (\(stop)): \(reason)", retryable: true)
            }
        }
    }


    /// Emits the session's notifications until it ends; returns why it ended.
    private func pump(_ session: NotificationRelaySession, into output: EventChannel,
                      ledger: NotificationWatchLedger) async throws -> String {
        let housekeeping = Task {
            // Best effort: with no desktop online there is nothing to send the queue to.
            guard let desktop = try? await resolveDesktop(session) else { return }
            try await resync(session, desktop: desktop, ledger: ledger, output: output)
            await drainQueue(session, desktop: desktop)
        }
        defer { housekeeping.cancel() }
        do {
            while let batch = try await session.events.next() {
                for (event, raw) in batch {
                    guard let notification = NotificationWire.notification(from: event) else {
                        logger.debug("ignoring a pushed event", metadata: ["event": "\(event.name)"])
                        continue
                    }
                    guard await ledger.admit(notification.id) else {
                        logger.debug("dropping a notification already shown", metadata: ["id": "\(notification.id)"])
                        continue
                    }
                    try await output.send(.notificationReceived(notification, raw: raw))
                }
            }
        } catch is CancellationError {
            // Cancelled while waiting for a push: as the end of the session's pushes (below).
        }
        housekeeping.cancel()
        if Task.isCancelled {
            await session.close()
            return "cancelled"
        }
        let end = await session.waitUntilClosed()
        await session.close()
        return end?.message ?? "the relay closed the connection"
    }

    static let historyPageSize = 50
    /// How far back a resync may page: 2,000 rows.
    static let historyPages = 40

    /// One page of the desktop's history, newest first.
    private func historyPage(_ page: Int, session: NotificationRelaySession, desktop: String) async throws -> [TetherCore.Notification] {
        let size = Self.historyPageSize
        let result = try await call(.getHistory, ["limit": .int(Int64(size)), "offset": .int(Int64(page * size)),
                                                  "unreadOnly": .bool(false)], session: session, desktop: desktop)
        return try NotificationResponseDecoder.history(result, unreadOnly: false, limit: size,
                                                       .init(method: .getHistory, desktop: desktop))
    }

    /// Pages back through the desktop's history (at most `historyPages`) until the rows are older than
    /// what the ledger knows complete, and shows what was pushed to mobile and missed, oldest first.
    private func resync(_ session: NotificationRelaySession, desktop: String, ledger: NotificationWatchLedger,
                        output: EventChannel) async throws {
        var missed: [TetherCore.Notification] = []
        var newest: Double?
        var complete = false
        for page in 0..<Self.historyPages {
            let rows: [TetherCore.Notification]
            do {
                rows = try await historyPage(page, session: session, desktop: desktop)
            } catch {
                logger.debug("no history resync for the watch", metadata: ["error": "\(error)"])
                break
            }
            if page == 0 { newest = rows.compactMap(\.createdAt).max() }
            let pushed = rows.filter { notification in
                if case .bool(let sent)? = notification.extra["sent_to_mobile"] { return sent }
                return notification.extra["source"]?.string != "local"
            }
            let (new, reachedKnown) = await ledger.triage(pushed)
            missed += new
            if reachedKnown || rows.count < Self.historyPageSize {
                complete = true
                break
            }
        }
        if complete { await ledger.confirm(through: newest) }
        for notification in missed.reversed() {
            logger.info("showing a notification missed while disconnected", metadata: ["id": "\(notification.id)"])
        }
        try await output.send(contentsOf: missed.reversed().map { .notificationReceived($0) })
    }
}

/// What a watch has shown, shared by the push loop and each reconnection's resync: the ids
/// (the last 4,096), the baseline (the history when the watch began: not news) and the desktop
/// time up to which every pushed row is known to have been shown or to be in the baseline.
actor NotificationWatchLedger {
    /// More than the iOS client's 256: a resync pages back up to 2,000 rows and must recognise them.
    private var seen = RecentSet(capacity: 4096)
    private var baseline: Set<String>?
    private var confirmedThrough: Double?
    /// When the watch began, in epoch milliseconds.
    private let startedAt = Date().timeIntervalSince1970 * 1000

    /// Whether `id` is news (and now remembered).
    func admit(_ id: String) -> Bool { seen.insert(id) }

    func setBaseline(_ page: [TetherCore.Notification]) {
        baseline = Set(page.map(\.id))
        confirmedThrough = page.compactMap(\.createdAt).max()
    }

    /// A page of history, newest first: the rows that are news (now remembered), and whether the
    /// page reached rows older than the confirmed point (older pages hold nothing new). Without a
    /// baseline (the desktop could not be read before the watch registered), the rows created
    /// before the watch began — by the desktop's clock, so a skewed clock can blur the edge —
    /// become it.
    func triage(_ page: [TetherCore.Notification]) -> (new: [TetherCore.Notification], reachedKnown: Bool) {
        if baseline == nil {
            // Nothing older than the watch is news.
            baseline = Set(page.filter { ($0.createdAt ?? 0) < startedAt }.map(\.id))
            confirmedThrough = startedAt
        }
        let baseline = baseline ?? []
        var new: [TetherCore.Notification] = []
        for notification in page {
            if let confirmedThrough, let created = notification.createdAt, created < confirmedThrough {
                return (new, true)
            }
            if !baseline.contains(notification.id), seen.insert(notification.id) { new.append(notification) }
        }
        return (new, false)
    }

    /// A resync read back to the confirmed point: everything up to `newest` is now known.
    func confirm(through newest: Double?) {
        guard let newest else { return }
        confirmedThrough = max(confirmedThrough ?? newest, newest)
    }
}
