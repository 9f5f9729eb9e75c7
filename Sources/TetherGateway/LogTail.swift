import Logging
import Synchronization
import TetherCore

/// Publishes a shared log's events to this replica's live clients: every committed event, this
/// replica's appends and the other replicas' alike, read from the log in seq order after the
/// last one it published. The shared log makes seqs visible in seq order (`PostgresEventStore`),
/// so such a read never skips one. It reads when woken: by this replica's appends, by the
/// store's notice that another replica appended (`watch`), and every `pollInterval` besides, in
/// case a notice was lost while the listening connection reconnected.
public final class LogTail: Sendable {
    let log: any EventStore
    let broadcast: EventBroadcast
    let pollInterval: Duration
    private let state = Mutex(State())
    private let started = Mutex<Task<Void, any Error>?>(nil)

    private struct State {
        /// The last seq published; nil until `start()` read where the log ended.
        var published: Int64?
        var reading = false
        /// Woken while a read was under way: read once more after it.
        var wokenAgain = false
        var waiters: [(id: UInt64, seq: Int64, continuation: CheckedContinuation<Void, Never>)] = []
        var lastWaiter: UInt64 = 0
    }

    init(log: any EventStore, broadcast: EventBroadcast, pollInterval: Duration = .seconds(2)) {
        self.log = log
        self.broadcast = broadcast
        self.pollInterval = pollInterval
    }

    /// Takes the log's current end as published (clients replay what is before it): once, before
    /// this replica appends or serves live clients.
    func start() async throws {
        let task = started.withLock { task -> Task<Void, any Error> in
            if let task { return task }
            let made = Task {
                let end = try await self.log.lastSeq()
                self.state.withLock { state in
                    if state.published == nil { state.published = end }
                }
            }
            task = made
            return made
        }
        do {
            try await task.value
        } catch {
            started.withLock { $0 = nil }  // the next call tries again
            throw error
        }
    }

    /// Publishes this replica's own batch, just committed, without reading it back — when nothing
    /// is being read and it follows the last seq published (no other replica's event between).
    /// False when it does not; `published(through:)` then waits for the read.
    func publishOwn(_ events: [LoggedEvent]) -> Bool {
        guard let first = events.first, let last = events.last else { return true }
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
            guard !state.reading, state.published == first.seq - 1 else { return nil }
            for event in events { broadcast.publish(event) }
            state.published = last.seq
            let ready = state.waiters.filter { $0.seq <= last.seq }.map(\.continuation)
            state.waiters.removeAll { $0.seq <= last.seq }
            return ready
        }
        guard let ready else { return false }
        for continuation in ready { continuation.resume() }
        return true
    }

    /// Returns when every event through `seq` was published, or once the task is cancelled: a
    /// replica shutting down while its database is gone must not wait for a read that never comes.
    func published(through seq: Int64) async {
        wake()
        let id = state.withLock { state -> UInt64 in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if let published = state.published, published >= seq { return true }
                    if Task.isCancelled { return true }  // cancelled before it waited: onCancel found nothing
                    state.waiters.append((id, seq, continuation))
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            let waiting = state.withLock { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0).continuation }
            }
            waiting?.resume()
        }
    }

    /// Reads and publishes what was committed since the last read (soon, on a task of its own).
    func wake() {
        let begin = state.withLock { state -> Bool in
            guard state.published != nil else { return false }
            if state.reading {
                state.wokenAgain = true
                return false
            }
            state.reading = true
            return true
        }
        if begin { Task { await self.readOn() } }
    }

    /// Until `cancelled`: wakes on the store's notices and every `pollInterval`.
    func watch(logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            if let shared = log as? any SharedEventStore {
                group.addTask { await shared.watchAppends(logger: logger) { self.wake() } }
            }
            group.addTask {
                while (try? await Task.sleep(for: self.pollInterval)) != nil { self.wake() }
            }
            await group.waitForAll()
        }
    }

    private func readOn() async {
        while true {
            state.withLock { $0.wokenAgain = false }
            await readToTheEnd()
            let again = state.withLock { state -> Bool in
                if state.wokenAgain { return true }
                state.reading = false
                return false
            }
            if !again { return }
        }
    }

    private func readToTheEnd() async {
        guard var after = state.withLock({ $0.published }) else { return }
        do {
            while true {
                let events = try await log.events(after: after, matching: EventQuery(), limit: 1000)
                guard let last = events.last else { return }
                for event in events { broadcast.publish(event) }
                let more = events.count == 1000
                after = last.seq
                let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.published = after
                    let ready = state.waiters.filter { $0.seq <= after }.map(\.continuation)
                    state.waiters.removeAll { $0.seq <= after }
                    return ready
                }
                for continuation in ready { continuation.resume() }
                if !more { return }  // a wake meanwhile reads again
            }
        } catch {
            // Read again from the same seq shortly: appenders wait for their events' publication.
            try? await Task.sleep(for: .milliseconds(500))
            state.withLock { $0.wokenAgain = true }
        }
    }
}
