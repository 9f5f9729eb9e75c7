import Foundation
import Logging
import NIOCore
import Synchronization
import TetherCore

/// Replay-then-live for one client of `GET /v1/events`. It subscribes to the live broadcast
/// before reading the log, replays every logged event after the cursor, then passes live events
/// with a seq above the last one sent: nothing is skipped or repeated at the seam.
public struct EventStreamer: Sendable {
    public let journal: EventJournal
    public let filter: EventQuery
    public let cursor: EventStreamCursor
    public let heartbeatInterval: Duration
    /// A write that has not completed after this long means the client stopped reading (its
    /// socket and ours are full): it is cut off, in the replay as in the live phase.
    public let stallLimit: Duration

    public init(journal: EventJournal, filter: EventQuery, cursor: EventStreamCursor, heartbeat: Duration = .seconds(15),
                stallLimit: Duration = .seconds(25)) {
        self.journal = journal
        self.filter = filter
        self.cursor = cursor
        heartbeatInterval = heartbeat
        self.stallLimit = stallLimit
    }

    /// The live subscription a stream reads: made before the replay reads the log, so events
    /// appended meanwhile are not lost; the broadcast applies the filter, so events this client
    /// does not want are never queued.
    public func subscribe() -> EventSubscription {
        journal.broadcast.subscribe(matching: filter)
    }

    /// Writes the replay's SSE frames through `write` (several buffers make one write), then the
    /// live ones to `live` from its event loop, until the subscription ends (shutdown, overflow,
    /// the connection closed) or `write` throws (the client went away). `subscription` must come
    /// from `subscribe()` (its filter is this stream's) before this is called.
    public func stream(_ subscription: EventSubscription, live: any LiveFrameSink,
                       write unguarded: ([ByteBuffer]) async throws -> Void) async throws {
        let heartbeats = Task { [heartbeatInterval] in
            while !Task.isCancelled {
                try await Task.sleep(for: heartbeatInterval)
                subscription.heartbeat()
            }
        }
        let pending = PendingWrite()
        let watchdog = Task { [stallLimit] in
            while !Task.isCancelled {
                try await Task.sleep(for: stallLimit / 10)
                if let started = pending.started ?? subscription.blockedSince, ContinuousClock.now - started > stallLimit {
                    subscription.cutOff()
                    return
                }
            }
        }
        defer {
            heartbeats.cancel()
            watchdog.cancel()
            subscription.cancel()
        }
        func write(_ buffers: [ByteBuffer]) async throws {
            pending.started = ContinuousClock.now
            defer { pending.started = nil }
            try await unguarded(buffers)
        }
        func write(_ text: String) async throws {
            try await write([ByteBuffer(string: text)])
        }
        var lastSent: Int64
        switch cursor {
        case .now:
            lastSent = try await journal.log.lastSeq()
            try await write(SSEFrame.cursor(lastSent))
        case .after(let seq):
            lastSent = seq
            // Replay in pages; events appended meanwhile are both here and in the subscription.
            var scannedThrough = seq
            var first = true
            while true {
                let page = try await journal.log.page(after: scannedThrough, matching: filter, limit: 500)
                // Checked on every page: retention may trim between two of them.
                if let expired = Self.expiry(of: scannedThrough, in: page, first: first) {
                    try await write(SSEFrame.event(expired))
                    scannedThrough = expired.seq
                    lastSent = expired.seq
                    first = false
                    continue
                }
                first = false
                guard let last = page.events.last else { break }
                // One write a page: a replay of thousands of events is not thousands of flushes.
                try await write(page.events.map(SSEFrame.event).joined())
                scannedThrough = last.seq
                lastSent = last.seq
            }
        }
        // From here on the connection's event loop writes the live events, each pass all that
        // arrived since the last in one write: the frames as the broadcast encoded them.
        await subscription.writeLive(to: live, after: lastSent, fanOut: journal.broadcast.fanOut(for: live.eventLoop))
    }

    /// The `cursor_expired` event a replay from `cursor` owes before `page` (read after it),
    /// nil when it owes none: events after the cursor were trimmed by retention — before the
    /// stream began or between two of its pages —, or (`first`: the client's own cursor) the
    /// cursor is past the end of this log, which was reset (a deleted database, writes lost in
    /// a power cut) and hands out those seqs again: without it the client would skip them.
    static func expiry(of cursor: Int64, in page: EventLog.Page, first: Bool) -> LoggedEvent? {
        if cursor < page.trimmedThrough { return cursorExpired(oldest: page.trimmedThrough + 1) }
        if first, cursor > page.lastSeq { return cursorExpired(oldest: page.trimmedThrough + 1, pastTheEnd: (cursor, page.lastSeq)) }
        return nil
    }

    /// The schema-v1 `error` event that opens a stream whose cursor is older than the log (or
    /// past its end): its id is the oldest retained seq − 1, so the client's next resume starts
    /// there.
    static func cursorExpired(oldest: Int64, pastTheEnd: (cursor: Int64, last: Int64)? = nil) -> LoggedEvent {
        var codec = EventCodec()
        let message = pastTheEnd.map { "the cursor \($0.cursor) is past the end of this log (seq \($0.last)): the log was reset; the stream continues from the oldest kept event" }
            ?? "events before seq \(oldest) were trimmed by retention (retain_days); the stream continues from the oldest kept event"
        let event = Event(.error, data: [
            "code": "cursor_expired", "oldest": .int(oldest), "message": .string(message), "retryable": false,
        ])
        var bytes = codec.encode(event)
        bytes.removeLast()
        return LoggedEvent(seq: oldest - 1, type: "error", profile: nil, session: nil, line: String(decoding: bytes, as: UTF8.self))
    }
}

/// When the write under way began (nil between writes), for the stall watchdog.
final class PendingWrite: Sendable {
    private let instant = Mutex<ContinuousClock.Instant?>(nil)
    var started: ContinuousClock.Instant? {
        get { instant.withLock { $0 } }
        set { instant.withLock { $0 = newValue } }
    }
}
