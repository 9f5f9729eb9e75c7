import TetherCore
import TetherStreaming

/// The offline queue: `read`, `read-all`, `delete` and `clear` issued while the desktop is
/// unreachable wait here and are sent, oldest first, the next time Tether reaches it — the iOS
/// client's `OfflineCommandQueue` (protocols/notification.md §6.1): capacity 100 (the oldest
/// entry goes first), 3 attempts per entry. An entry out of attempts stays, marked failed, so
/// `notifications queue` can show it, until newer entries push it out.
///
/// A pure value; `NotificationQueueStore` keeps it in the state directory.
struct NotificationOfflineQueue: Sendable, Equatable {
    static let capacity = 100
    static let maxAttempts = 3

    struct Entry: Sendable, Equatable {
        var id: String
        var method: NotificationMethod
        var params: JSONObject
        /// Epoch milliseconds.
        var queuedAt: Int64
        var attempts = 0
        var lastError: String?

        var isExhausted: Bool { attempts >= NotificationOfflineQueue.maxAttempts }

        /// As stored, and as `notifications queue` prints it.
        var json: JSONObject {
            .compact([
                "id": .string(id), "method": .string(method.rawValue), "params": .object(params),
                "queued_at": .int(queuedAt), "attempts": .int(Int64(attempts)),
                "status": .string(isExhausted ? "failed" : "pending"), "last_error": JSONValue(lastError),
            ])
        }

        init(id: String, method: NotificationMethod, params: JSONObject, queuedAt: Int64, attempts: Int = 0,
             lastError: String? = nil) {
            self.id = id
            self.method = method
            self.params = params
            self.queuedAt = queuedAt
            self.attempts = attempts
            self.lastError = lastError
        }

        init?(json: JSONValue) {
            guard let id = json["id"]?.string, let method = json["method"]?.string.flatMap(NotificationMethod.init(rawValue:)),
                  method.isQueueable else { return nil }
            self.init(id: id, method: method, params: json["params"]?.object ?? [:], queuedAt: json["queued_at"]?.int ?? 0,
                      attempts: Int(json["attempts"]?.int ?? 0), lastError: json["last_error"]?.string)
        }
    }

    private(set) var entries: [Entry] = []

    init(entries: [Entry] = []) {
        self.entries = entries
    }

    /// Reads the stored form; entries it cannot read are skipped.
    init(json: JSONValue) {
        entries = (json["entries"]?.array ?? json.array ?? []).compactMap(Entry.init(json:))
    }

    var json: JSONValue { .object(["version": 1, "entries": .array(entries.map { .object($0.json) })]) }

    /// Appends `entry`; returns the entries evicted to stay within capacity (oldest first).
    @discardableResult
    mutating func enqueue(_ entry: Entry) -> [Entry] {
        entries.append(entry)
        let overflow = entries.count - Self.capacity
        guard overflow > 0 else { return [] }
        let evicted = Array(entries.prefix(overflow))
        entries.removeFirst(overflow)
        return evicted
    }

    /// What a drain sends, in the order it was queued.
    var drainable: [Entry] { entries.filter { !$0.isExhausted } }

    var pendingCount: Int { drainable.count }

    mutating func remove(id: String) {
        entries.removeAll { $0.id == id }
    }

    /// An attempt failed on the desktop's side (an error, a timeout): one attempt used.
    mutating func recordFailure(id: String, error: String) {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return }
        entries[index].attempts += 1
        entries[index].lastError = error
    }
}
