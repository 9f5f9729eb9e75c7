import Foundation
import TetherCore
import TetherNet

/// `notifications watch` (and `events --follow`): a long-lived registration under the stable
/// peer id, turning `notification.received` pushes — both envelope families, payload object or
/// string, replays from the relay's offline queue included — into `notification.received`
/// events, each notification once (the last 256 ids are remembered, as the iOS client does).
/// The link is kept alive with pings; a dropped one reconnects with backoff and jitter, and
/// every (re)connection sends what waits in the offline queue.
extension NotificationRelayBackend {
    public func watch() -> AsyncThrowingStream<Event, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Event.self)
        let task = Task {
            do {
                try await surface { try await runWatch(continuation) }
                continuation.finish()
            } catch is CancellationError {
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func runWatch(_ output: AsyncThrowingStream<Event, any Error>.Continuation) async throws {
        let peerID = try stablePeerID()
        let endpoint = configuration.url
        var policy = ReconnectPolicy(configuration: configuration.reconnect)
        var seen = RecentSet(capacity: 256)
        output.yield(.connection(.connecting, attempt: 1, endpoint: endpoint))
        while !Task.isCancelled {
            policy.connecting()
            let reason: String
            do {
                let session = try await openSession(peerID: peerID, longLived: true)
                policy.connected(at: .now)
                output.yield(.connection(.connected, endpoint: endpoint))
                let (ended, delivered) = await pump(session, into: output, seen: &seen)
                reason = ended
                // A link that delivered is not one that refuses us: the schedule starts over.
                if delivered > 0 { policy.madeProgress() }
            } catch let unreachable as DesktopUnreachable {
                reason = unreachable.error.message
            }
            if Task.isCancelled { return }
            switch policy.failed(.transportError, at: .now) {
            case .reconnect(let delay, let attempt):
                output.yield(.connection(.reconnecting, attempt: attempt, endpoint: endpoint,
                                         reason: "\(reason); retrying in \(Self.seconds(delay))"))
                try await Task.sleep(for: delay)
            case .stop(let stop):
                throw TetherError(.unavailable, "gave up on the signaling relay at \(endpoint) (\(stop)): \(reason)", retryable: true)
            }
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f s", Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Emits the session's notifications until it ends; returns why it ended and how many it emitted.
    private func pump(_ session: NotificationRelaySession, into output: AsyncThrowingStream<Event, any Error>.Continuation,
                      seen: inout RecentSet) async -> (reason: String, delivered: Int) {
        var delivered = 0
        let housekeeping = Task {
            // Best effort: with no desktop online there is nothing to send the queue to.
            if let desktop = try? await resolveDesktop(session) { await drainQueue(session, desktop: desktop) }
        }
        for await (event, raw) in session.events {
            guard let notification = NotificationWire.notification(from: event) else {
                logger.debug("ignoring a pushed event", metadata: ["event": "\(event.name)"])
                continue
            }
            guard seen.insert(notification.id) else {
                logger.debug("dropping a notification already shown", metadata: ["id": "\(notification.id)"])
                continue
            }
            output.yield(.notificationReceived(notification, raw: raw))
            delivered += 1
        }
        housekeeping.cancel()
        if Task.isCancelled {
            await session.close()
            return ("cancelled", delivered)
        }
        let end = await session.waitUntilClosed()
        await session.close()
        return (end?.message ?? "the relay closed the connection", delivered)
    }
}
