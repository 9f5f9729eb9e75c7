import Foundation
import TetherCore
import TetherStreaming

/// The 11 methods as `tether notifications …` calls them.
extension NotificationRelayBackend {
    // MARK: Reads

    public func listNotifications(unreadOnly: Bool, limit: Int?, offset: Int?) async throws -> [TetherCore.Notification] {
        // The clients' defaults and clamps: limit 50 (at least 1), offset 0 (at least 0).
        let params: JSONObject = ["limit": .int(Int64(Swift.max(1, limit ?? 50))), "offset": .int(Int64(Swift.max(0, offset ?? 0))),
                                  "unreadOnly": .bool(unreadOnly)]
        return try await request(.getHistory, params) { result, context in
            try NotificationResponseDecoder.history(result, unreadOnly: unreadOnly, limit: limit.map { Swift.max(1, $0) }, context)
        }
    }

    public func unreadCount() async throws -> Int {
        try await request(.getUnreadCount, [:]) { result, context in
            try NotificationResponseDecoder.unreadCount(result, context)
        }
    }

    public func settings(set assignments: [String: String]) async throws -> JSONObject {
        if assignments.isEmpty {
            return try await request(.getSettings, [:]) { result, context in
                try NotificationResponseDecoder.settings(result, context)
            }
        }
        let change = try NotificationSettingsChange(assignments)
        return try await request(.updateSettings, change.params) { result, context in
            try NotificationResponseDecoder.settingsUpdate(result, requested: change, context)
        }
    }

    // MARK: Sending

    public func sendNotification(title: String, body: String, priority: String?) async throws -> JSONObject {
        try Self.requireTitle(title)
        let priority = (priority ?? "normal").lowercased()
        guard NotificationValues.priorities.contains(priority) else {
            throw TetherError(.usage, "unknown priority \"\(priority)\"", hint: "use low, normal, high or urgent")
        }
        // `priority`/`respectQuietHours` are the contract's; the desktop reads Electron's `urgency` instead.
        let urgency = priority == "urgent" ? "critical" : priority == "low" ? "low" : "normal"
        let params: JSONObject = ["title": .string(title), "body": .string(body), "priority": .string(priority),
                                  "respectQuietHours": true, "urgency": .string(urgency)]
        return try await request(.send, params) { result, context in
            try NotificationResponseDecoder.send(result, priority: priority, context)
        }
    }

    public func push(title: String, body: String, device: String?) async throws -> JSONObject {
        try Self.requireTitle(title)
        var params: JSONObject = ["title": .string(title), "body": .string(body)]
        if let device {
            // The contract's `deviceId`; the desktop reads `targetDevices`.
            params["deviceId"] = .string(device)
            params["targetDevices"] = [.string(device)]
        }
        return try await request(.sendToMobile, params) { result, context in
            try NotificationResponseDecoder.push(result, device: device, context)
        }
    }

    public func broadcast(title: String, body: String) async throws -> JSONObject {
        try Self.requireTitle(title)
        return try await request(.broadcast, ["title": .string(title), "body": .string(body)]) { result, context in
            try NotificationResponseDecoder.broadcast(result, context)
        }
    }

    // MARK: Housekeeping (queued while the desktop is unreachable)

    /// One `markAsRead` per id, each sending both `notificationId` (the contract) and `id` (what
    /// the desktop reads — without it the desktop marks everything read).
    public func markRead(ids: [String]) async throws -> JSONObject {
        guard !ids.isEmpty, !ids.contains(where: \.isEmpty) else {
            throw TetherError(.usage, "`notifications read` needs notification ids", hint: "`tether notifications list` shows them")
        }
        let calls = ids.map { (NotificationMethod.markAsRead, Self.markReadParams($0)) }
        return try await queueable(calls) { session, desktop, progress in
            var count: Int64 = 0
            var all = false
            for (method, params) in calls {
                let result = try await call(method, params, session: session, desktop: desktop)
                progress.sent += 1
                let marked = try NotificationResponseDecoder.markRead(result, .init(method: method, desktop: desktop))
                // Saturating: the count is the desktop's word, and a huge one must not trap.
                if let number = marked.int { count = count.addingReportingOverflow(number).overflow ? .max : count + number } else { all = true }
            }
            var answer: JSONObject = ["status": "ok", "ids": JSONValue(ids), "marked_count": all ? "all" : .int(count)]
            if all { answer["warning"] = "the desktop reports it marked every notification read" }
            return answer
        }
    }

    public func markAllRead() async throws -> JSONObject {
        try await queueable([(.markAllAsRead, [:])]) { session, desktop, _ in
            let result = try await call(.markAllAsRead, [:], session: session, desktop: desktop)
            return try NotificationResponseDecoder.markAllRead(result, .init(method: .markAllAsRead, desktop: desktop))
        }
    }

    public func deleteNotification(id: String) async throws -> JSONObject {
        guard !id.isEmpty else { throw TetherError(.usage, "`notifications delete` needs a notification id") }
        let params: JSONObject = ["notificationId": .string(id)]
        return try await queueable([(.delete, params)]) { session, desktop, _ in
            let result = try await call(.delete, params, session: session, desktop: desktop)
            return try NotificationResponseDecoder.delete(result, id: id, .init(method: .delete, desktop: desktop))
        }
    }

    public func clearNotifications() async throws -> JSONObject {
        try await queueable([(.clearAll, [:])]) { session, desktop, _ in
            let result = try await call(.clearAll, [:], session: session, desktop: desktop)
            return try NotificationResponseDecoder.clear(result, .init(method: .clearAll, desktop: desktop))
        }
    }

    static func markReadParams(_ id: String) -> JSONObject { ["notificationId": .string(id), "id": .string(id)] }

    static func requireTitle(_ title: String) throws(TetherError) {
        guard !title.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw TetherError(.usage, "a notification needs a title", hint: "--title TEXT")
        }
    }

    // MARK: Plumbing

    /// One request on a one-shot registration, decoded; every failure as a `TetherError`.
    func request<T>(_ method: NotificationMethod, _ params: JSONObject,
                    decode: (JSONValue, NotificationResponseDecoder.Context) throws -> T) async throws -> T {
        try await surface {
            try await withDesktop { session, desktop in
                let result = try await call(method, params, session: session, desktop: desktop)
                return try decode(result, .init(method: method, desktop: desktop))
            }
        }
    }

    /// How many of a command's calls the desktop answered (`queueable`'s body counts them).
    final class CallProgress {
        var sent = 0
    }

    /// Runs `body` with the desktop; when it cannot be reached, queues the calls it did not get
    /// to (from `progress.sent` on) instead and says so. A call the relay took for the offline
    /// desktop (`peer-offline`) is the relay's to deliver; only the ones after it are queued here.
    func queueable(_ calls: [(NotificationMethod, JSONObject)],
                   _ body: (NotificationRelaySession, String, CallProgress) async throws -> JSONObject) async throws -> JSONObject {
        let progress = CallProgress()
        return try await surface {
            do {
                return try await withDesktop { try await body($0, $1, progress) }
            } catch let unreachable as DesktopUnreachable {
                let unsent = Array(calls[Swift.min(progress.sent, calls.count)...])
                guard unreachable.relayQueued, let held = unsent.first else {
                    return try enqueue(unsent, reason: unreachable.error.message)
                }
                var answer: JSONObject = .compact([
                    "status": "queued", "queued_by": "relay", "method": .string(held.0.rawValue),
                    "reason": .string(unreachable.error.message),
                    "message": "the desktop is offline: the relay holds the request and delivers it when the desktop reconnects",
                ])
                let rest = Array(unsent.dropFirst())
                if !rest.isEmpty {
                    // Never sent: they wait in Tether's queue, after the one the relay holds.
                    answer = try enqueue(rest, reason: unreachable.error.message)
                    answer["relay_holds"] = .array([held.1["notificationId"] ?? .string(held.0.rawValue)])
                }
                if calls.count > 1 { answer["ids"] = .array(unsent.compactMap { $0.1["notificationId"] }) }
                return answer
            }
        }
    }

    /// Puts `calls` in the offline queue; the answer the CLI prints (it exits 0).
    func enqueue(_ calls: [(NotificationMethod, JSONObject)], reason: String) throws(TetherError) -> JSONObject {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let entries = calls.map { NotificationOfflineQueue.Entry(id: UUID().uuidString, method: $0.0, params: $0.1, queuedAt: now) }
        let (evicted, pending) = try store.update { queue in
            let evicted = entries.flatMap { queue.enqueue($0) }
            return (evicted, queue.pendingCount)
        }
        for entry in evicted {
            logger.warning("the notification offline queue is full; dropped its oldest entry",
                           metadata: ["method": "\(entry.method.rawValue)", "queued_at": "\(entry.queuedAt)"])
        }
        logger.info("desktop unreachable; queued", metadata: ["method": "\(calls[0].0.rawValue)", "reason": "\(reason)"])
        var answer: JSONObject = [
            "status": "queued", "method": .string(calls[0].0.rawValue),
            "queue_ids": JSONValue(entries.map(\.id)), "pending": .int(Int64(pending)), "reason": .string(reason),
            "message": "the desktop cannot be reached, so this waits in Tether's offline queue and is sent the next time Tether reaches the desktop (`tether notifications queue` lists what waits)",
        ]
        if calls.count > 1 { answer["ids"] = .array(calls.compactMap { $0.1["notificationId"] }) }
        return answer
    }

    /// Sends what waits in the offline queue, in order, before anything else (the desktop
    /// applies them as the user issued them). Stops at the first sign the desktop went away;
    /// an error or a timeout costs the entry one of its attempts. One process drains at a time.
    func drainQueue(_ session: NotificationRelaySession, desktop: String) async {
        let lock: NotificationQueueStore.FileLock?
        let entries: [NotificationOfflineQueue.Entry]
        do {
            lock = try store.tryDrainLock()
            entries = lock == nil ? [] : try store.load().drainable
        } catch {
            logger.warning("cannot read the notification offline queue", metadata: ["error": "\(error)"])
            return
        }
        guard let lock else {
            logger.debug("another tether is sending the notification offline queue")
            return
        }
        defer { lock.release() }
        guard !entries.isEmpty else { return }
        var sent = 0
        draining: for entry in entries {
            let context = NotificationResponseDecoder.Context(method: entry.method, desktop: desktop)
            do {
                let result = try await call(entry.method, entry.params, session: session, desktop: desktop)
                switch entry.method {
                case .markAsRead: _ = try NotificationResponseDecoder.markRead(result, context)
                case .markAllAsRead: _ = try NotificationResponseDecoder.markAllRead(result, context)
                case .delete:
                    _ = try NotificationResponseDecoder.delete(result, id: entry.params["notificationId"]?.string ?? "", context)
                case .clearAll: _ = try NotificationResponseDecoder.clear(result, context)
                default: break
                }
                try? store.update { $0.remove(id: entry.id) }
                sent += 1
            } catch let unreachable as DesktopUnreachable {
                if unreachable.relayQueued {
                    // The relay holds it now and delivers it when the desktop is back: sending
                    // it again then would run it twice (a clearAll would clear newer ones too).
                    try? store.update { $0.remove(id: entry.id) }
                    sent += 1
                }
                break draining
            } catch is CancellationError {
                break draining
            } catch let error as TetherError where entry.method == .delete && error.code == .notFound {
                try? store.update { $0.remove(id: entry.id) }  // deleted meanwhile: done
                sent += 1
            } catch {
                let message = (error as? TetherError)?.message ?? "\(error)"
                try? store.update { $0.recordFailure(id: entry.id, error: message) }
                logger.warning("a queued notification command failed on the desktop",
                               metadata: ["method": "\(entry.method.rawValue)", "attempt": "\(entry.attempts + 1)", "error": "\(message)"])
            }
        }
        if sent > 0 {
            logger.info("sent queued notification commands to the desktop", metadata: ["count": "\(sent)", "desktop": "\(desktop)"])
        }
    }
}
