import Foundation
import Testing
import TetherCore
@testable import TetherNotification
import TetherStreaming

struct NotificationOfflineQueueTests {
    typealias Queue = NotificationOfflineQueue

    func entry(_ n: Int, _ method: NotificationMethod = .markAsRead) -> Queue.Entry {
        Queue.Entry(id: "q\(n)", method: method, params: ["notificationId": .string("n\(n)")], queuedAt: Int64(n))
    }

    @Test func keepsOrderAndEvictsTheOldestPastCapacity() {
        var queue = Queue()
        for n in 0..<100 { #expect(queue.enqueue(entry(n)).isEmpty) }
        let evicted = queue.enqueue(entry(100))
        #expect(evicted.map(\.id) == ["q0"])
        #expect(queue.entries.count == 100)
        #expect(queue.entries.first?.id == "q1" && queue.entries.last?.id == "q100")
        #expect(queue.drainable.map(\.id) == queue.entries.map(\.id))
    }

    @Test func threeAttemptsThenFailed() {
        var queue = Queue(entries: [entry(1), entry(2, .clearAll)])
        for attempt in 1...3 {
            #expect(queue.drainable.map(\.id) == ["q1", "q2"])
            queue.recordFailure(id: "q1", error: "timeout \(attempt)")
        }
        #expect(queue.drainable.map(\.id) == ["q2"])
        #expect(queue.entries[0].json["status"] == "failed")
        #expect(queue.entries[0].json["attempts"] == 3)
        #expect(queue.entries[0].json["last_error"] == "timeout 3")
        #expect(queue.pendingCount == 1)
        queue.remove(id: "q2")
        #expect(queue.drainable.isEmpty && queue.entries.count == 1)
    }

    @Test func roundTripsThroughJSON() throws {
        var queue = Queue(entries: [entry(1), entry(2, .delete)])
        queue.recordFailure(id: "q2", error: "boom")
        let reread = Queue(json: try JSONParser.parse(queue.json.serialized))
        #expect(reread == queue)
        #expect(reread.entries[1].json == [
            "id": "q2", "method": "notification.delete", "params": ["notificationId": "n2"], "queued_at": 2,
            "attempts": 1, "status": "pending", "last_error": "boom",
        ])
        // Entries that are not queueable calls, or unreadable, are skipped.
        let odd = Queue(json: ["entries": [["id": "x", "method": "notification.send"], ["method": "notification.clearAll"], .object(entry(3).json)]])
        #expect(odd.entries.map(\.id) == ["q3"])
    }

    @Test func theStoreSurvivesARestart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-queue-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = NotificationQueueStore(stateDirectory: directory, profile: "desk/1")
        #expect(store.directory.hasSuffix("notification/desk_1"))
        #expect(try store.load().entries.isEmpty)
        try store.update { $0.enqueue(entry(1)) }
        try store.update { $0.enqueue(entry(2, .clearAll)) }
        // A new store (a new process) reads the same queue.
        let again = NotificationQueueStore(stateDirectory: directory, profile: "desk/1")
        #expect(try again.load().entries.map(\.id) == ["q1", "q2"])
        let attributes = try FileManager.default.attributesOfItem(atPath: again.queueFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // One drainer at a time.
        let lock = try #require(try store.tryDrainLock())
        #expect(try again.tryDrainLock() == nil)
        lock.release()
        let second = try again.tryDrainLock()
        #expect(second != nil)
        second?.release()
    }

    @Test func aCorruptQueueIsReportedNotSilentlyDropped() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-queue-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = NotificationQueueStore(stateDirectory: directory, profile: "p")
        try store.write(Array("{nope".utf8), to: store.queueFile)
        #expect(throws: TetherError.self) { _ = try store.load() }
    }

    @Test func peerIdentity() throws {
        #expect(NotificationPeerIdentity.derived(user: "me", host: "box.lan", profile: "desk") == "tether-me@box-desk")
        #expect(NotificationPeerIdentity.derived(user: "é x", host: "", profile: "a/b") == "tether---x@unknown-a-b")
        let ephemeral = NotificationPeerIdentity.ephemeral(from: "tether-me@box-desk")
        #expect(ephemeral.hasPrefix("tether-me@box-desk~") && ephemeral != NotificationPeerIdentity.ephemeral(from: "tether-me@box-desk"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-peer-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = NotificationQueueStore(stateDirectory: directory, profile: "desk")
        let first = try NotificationPeerIdentity.stable(configured: nil, store: store, profile: "desk")
        try store.write(Array("kept-id\n".utf8), to: store.peerIDFile)
        #expect(try NotificationPeerIdentity.stable(configured: nil, store: store, profile: "desk") == "kept-id")
        #expect(try NotificationPeerIdentity.stable(configured: "mine", store: store, profile: "desk") == "mine")
        #expect(first.hasPrefix("tether-") && first.hasSuffix("-desk"))
    }
}
