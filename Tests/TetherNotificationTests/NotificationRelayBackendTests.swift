import Foundation
import Synchronization
import Testing
import TetherCore
@testable import TetherNotification

/// The backend against an in-memory relay and scripted desktops: the 11 methods in both result
/// shapes, discovery, timeouts, duplicates and late answers, and the offline queue.
struct NotificationRelayBackendTests {
    // MARK: The 11 methods

    @Test func everyMethodAgainstAContractDesktop() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        let backend = harness.backend()

        let list = try await backend.listNotifications(unreadOnly: false, limit: 10, offset: 5)
        #expect(list.map(\.id) == ["n-2", "n-1"])
        #expect(try await backend.unreadCount() == 4)
        #expect(try await backend.markRead(ids: ["n-2"]) == ["status": "ok", "ids": ["n-2"], "marked_count": 1])
        #expect(try await backend.markAllRead() == ["status": "ok", "marked_count": 4])
        #expect(try await backend.deleteNotification(id: "n-1") == ["status": "ok", "id": "n-1"])
        #expect(try await backend.clearNotifications() == ["status": "ok", "cleared_count": 7])
        #expect(try await backend.settings(set: [:])["quiet_hours_end"] == "07:30")
        #expect(try await backend.settings(set: ["quiet_hours_start": "23:00"])["settings"]?["quiet_hours_start"] == "23:00")
        #expect(try await backend.sendNotification(title: "Hi", body: "there", priority: "HIGH")["status"] == "sent")
        #expect(try await backend.push(title: "Hi", body: "there", device: nil)["delivered"] == true)
        #expect(try await backend.broadcast(title: "Hi", body: "all")["delivered_count"] == 2)

        #expect(harness.relay.methods == NotificationMethod.allCases.map(\.rawValue).sorted { order($0) < order($1) })
        let requests = harness.relay.requests
        #expect(requests[0]["params"] == ["limit": 10, "offset": 5, "unreadOnly": false])
        #expect(requests[8]["params"] == ["title": "Hi", "body": "there", "priority": "high", "respectQuietHours": true, "urgency": "normal"])
    }

    /// The order the test above calls them in.
    func order(_ method: String) -> Int {
        ["notification.getHistory", "notification.getUnreadCount", "notification.markAsRead", "notification.markAllAsRead",
         "notification.delete", "notification.clearAll", "notification.getSettings", "notification.updateSettings",
         "notification.send", "notification.sendToMobile", "notification.broadcast"].firstIndex(of: method) ?? 99
    }

    @Test func everyMethodAgainstTheRealDesktopShapes() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.desktop)
        let backend = harness.backend()

        let list = try await backend.listNotifications(unreadOnly: true, limit: nil, offset: nil)
        #expect(list.map(\.id) == ["notif-1795311063215-a1b2c3d4"])  // the desktop ignores unreadOnly; Tether does not
        #expect(try await backend.unreadCount() == 3)
        // Both ids go out, so the desktop marks one notification, not all of them.
        #expect(try await backend.markRead(ids: ["a", "b"]) == ["status": "ok", "ids": ["a", "b"], "marked_count": 2])
        #expect(harness.relay.requests[2]["params"] == ["notificationId": "a", "id": "a"])
        #expect(try await backend.markAllRead()["marked_count"] == 5)
        #expect(try await backend.clearNotifications()["cleared_count"] == 12)
        let settings = try await backend.settings(set: [:])
        #expect(settings["quiet_hours_start"] == "22:00" && settings["filters"]?["reminder"] == false)
        let update = try await backend.settings(set: ["quiet_hours_enabled": "true", "quiet_hours_start": "23:00"])
        #expect(update["warnings"] == nil)
        #expect(harness.relay.requests.last?["params"]?["quietHours"] == ["enabled": true, "start": "23:00"])
        #expect(try await backend.sendNotification(title: "t", body: "b", priority: "urgent")["id"] == "notif-1795311063999-deadbeef")
        #expect(harness.relay.requests.last?["params"]?["urgency"] == "critical")
        let push = try await backend.push(title: "t", body: "b", device: "phone-1")
        #expect(push["device"] == "phone-1" && push["delivered"] == nil)
        #expect(harness.relay.requests.last?["params"]?["targetDevices"] == ["phone-1"])
        #expect(harness.relay.requests.last?["params"]?["deviceId"] == "phone-1")
        #expect(try await backend.broadcast(title: "t", body: "b")["status"] == "sent")

        let missing = await TetherError.from { _ = try await backend.deleteNotification(id: "gone") }
        #expect(missing == nil)  // the fixture's plain delete succeeds
    }

    @Test func quietHoursAreAnOutcomeNotAnError() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1") { method, _ in
            method == "notification.send" ? [.result(try! Fixture.desktop("send.quietHours"))] : []
        }
        let result = try await harness.backend().sendNotification(title: "late", body: "night", priority: nil)
        #expect(result["status"] == "quiet_hours")
        #expect(result["priority"] == "normal")
    }

    @Test func usageErrorsFailBeforeAnythingIsSent() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        let backend = harness.backend()
        #expect(await TetherError.from { _ = try await backend.sendNotification(title: " ", body: "b", priority: nil) }?.code == .usage)
        #expect(await TetherError.from { _ = try await backend.sendNotification(title: "t", body: "b", priority: "loud") }?.code == .usage)
        #expect(await TetherError.from { _ = try await backend.markRead(ids: []) }?.code == .usage)
        #expect(await TetherError.from { _ = try await backend.settings(set: ["volume": "11"]) }?.code == .usage)
        #expect(await TetherError.from { _ = try await backend.listSessions(.init()) }?.code == .unsupported)
        #expect(harness.relay.requests.isEmpty)
        #expect(backend.capabilities == [.notifications, .events])
    }

    // MARK: Today's desktop

    @Test func todaysDesktopIsReportedPlainly() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.todays)
        let backend = harness.backend()
        let error = await TetherError.from { _ = try await backend.unreadCount() }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("\"Unknown command namespace: notification\"") == true)
        // Reached and refused is not unreachable: nothing is queued.
        #expect(await TetherError.from { _ = try await backend.markAllRead() }?.code == .unsupported)
        #expect(backend.pendingQueue().isEmpty)

        let report = try await backend.check()
        #expect(report.reachable == false)
        #expect(report.details["notification_rpc"] == "unsupported")
        #expect(report.details["desktop"] == "pc-1")
    }

    @Test func checkAgainstAWorkingDesktop() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        let report = try await harness.backend().check()
        #expect(report.reachable && report.details["notification_rpc"] == "ok" && report.details["unread"] == 4)
        #expect(report.details["peer_id"] == "tether-test")
        #expect(report.endpoint == "ws://fake-relay:9001")
    }

    // MARK: Peers

    @Test func findsTheDesktopAndRegistersWithAnEphemeralID() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        _ = try await harness.backend(peerID: "stable-me").unreadCount()
        let registered = try #require(harness.relay.registrations.first)
        #expect(registered.hasPrefix("stable-me~"))
        #expect(harness.relay.requests[0]["auth"] == ["did": .string(registered), "mobileDid": .string(registered)])
        #expect(!harness.relay.isRegistered(registered))  // unregistered when done
    }

    @Test func theDefaultPeerIDIsStableAndKept() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        _ = try await harness.backend(peerID: nil).unreadCount()
        _ = try await harness.backend(peerID: nil).unreadCount()
        let stables = harness.relay.registrations.map { $0.split(separator: "~")[0] }
        #expect(stables.count == 2 && stables[0] == stables[1] && stables[0].hasPrefix("tether-") && stables[0].hasSuffix("-desk"))
    }

    @Test func severalDesktopsNeedTheProfileToChoose() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        harness.relay.addDesktop("pc-2", behaviour: FakeDesktops.desktop)
        let error = await TetherError.from { _ = try await harness.backend().unreadCount() }
        #expect(error?.code == .configuration && error?.message.contains("pc-1, pc-2") == true)
        #expect(try await harness.backend(desktop: "pc-2").unreadCount() == 3)
    }

    @Test func noDesktopOnline() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", online: false, behaviour: FakeDesktops.contract)
        let error = await TetherError.from { _ = try await harness.backend().unreadCount() }
        #expect(error?.code == .unavailable && error?.message.contains("no desktop is connected") == true)
        let named = await TetherError.from { _ = try await harness.backend(desktop: "pc-1").unreadCount() }
        #expect(named?.message.contains("pc-1") == true)
    }

    // MARK: Answers

    @Test func aTimeoutSaysWhatDidNotAnswer() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1") { _, _ in [] }
        let started = ContinuousClock.now
        // Long enough for joining the relay on a loaded machine (it shares the budget), short
        // enough to tell from the 30 s default.
        let error = await TetherError.from { _ = try await harness.backend(timeout: .seconds(1)).unreadCount() }
        #expect(error?.code == .timeout)
        #expect(error?.message.contains("pc-1") == true && error?.message.contains("notification.getUnreadCount") == true)
        #expect(ContinuousClock.now - started < .seconds(10))  // far below the 30 s default: the configured timeout applied
    }

    @Test func duplicatesAndLateAnswersAreDropped() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1") { _, params in
            switch params["id"]?.string {
            case "a":  // answered twice: the twin arrives while "b" waits
                return [.result(["success": true, "markedCount": 1]),
                        .after(.milliseconds(20), [.result(["success": true, "markedCount": 99])])]
            default:
                return [.after(.milliseconds(120), [.result(["success": true, "markedCount": 1], stringified: false)])]
            }
        }
        #expect(try await harness.backend().markRead(ids: ["a", "b"])["marked_count"] == 2)
    }

    @Test func aLateAnswerToAnEarlierCallIsNotTakenForTheNextOne() async throws {
        let harness = Harness()
        let calls = Mutex(0)
        harness.relay.addDesktop("pc-1") { _, _ in
            let call = calls.withLock { value -> Int in
                value += 1
                return value
            }
            // The first answer comes 0.2 s into the second call, 0.3 s before the second's own,
            // which is 0.5 s inside its timeout: margins a loaded machine keeps.
            return call == 1 ? [.after(.milliseconds(1200), [.result(["success": true, "count": 111])])]
                : [.after(.milliseconds(500), [.result(["success": true, "count": 2])])]
        }
        let backend = harness.backend(timeout: .seconds(1))
        #expect(await TetherError.from { _ = try await backend.unreadCount() }?.code == .timeout)
        #expect(try await backend.unreadCount() == 2)
    }

    // MARK: The offline queue

    @Test func commandsQueueWhileTheRelayIsDownAndDrainInOrderNextTime() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.desktop)
        harness.relay.isUp = false
        let backend = harness.backend()
        let read = try await backend.markRead(ids: ["n1", "n2"])
        #expect(read["status"] == "queued" && read["queue_ids"]?.array?.count == 2 && read["ids"] == ["n1", "n2"])
        #expect(read["reason"]?.string?.contains("cannot reach the signaling relay") == true)
        #expect(try await backend.deleteNotification(id: "n3")["status"] == "queued")
        let clear = try await backend.clearNotifications()
        #expect(clear["status"] == "queued" && clear["pending"] == 4)
        // Reads are not queued: they fail.
        #expect(await TetherError.from { _ = try await backend.unreadCount() }?.code == .unavailable)

        let queue = backend.pendingQueue()
        #expect(queue.map { $0["method"]?.string ?? "" }
            == ["notification.markAsRead", "notification.markAsRead", "notification.delete", "notification.clearAll"])
        #expect(queue[1]["params"] == ["notificationId": "n2", "id": "n2"])
        #expect(queue.allSatisfy { $0["status"] == "pending" && $0["attempts"] == 0 })

        // A later process (the queue is on disk) reaches the desktop: the queue goes first, in order.
        harness.relay.isUp = true
        #expect(try await harness.backend().unreadCount() == 3)
        #expect(harness.relay.methods == ["notification.markAsRead", "notification.markAsRead", "notification.delete",
                                          "notification.clearAll", "notification.getUnreadCount"])
        #expect(backend.pendingQueue().isEmpty)
    }

    @Test func aQueuedEntryGetsThreeAttempts() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", online: false) { method, _ in
            method == "notification.markAllAsRead" ? [.result(["success": false, "markedCount": 0, "error": "db locked"])]
                : [.result(["success": true, "count": 0])]
        }
        let backend = harness.backend()
        #expect(try await backend.markAllRead()["status"] == "queued")
        harness.relay.setDesktop("pc-1", online: true)
        for attempt in 1...3 {
            _ = try await backend.unreadCount()
            let entry = try #require(backend.pendingQueue().first)
            #expect(entry["attempts"] == .int(Int64(attempt)))
            #expect(entry["last_error"]?.string?.contains("db locked") == true)
        }
        #expect(backend.pendingQueue().first?["status"] == "failed")
        _ = try await backend.unreadCount()
        #expect(harness.relay.methods.filter { $0 == "notification.markAllAsRead" }.count == 3)  // not a fourth time
    }

    @Test func aDeleteOfSomethingAlreadyGoneLeavesTheQueue() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", online: false) { method, _ in
            method == "notification.delete" ? [.result(["success": false, "error": "NOT_FOUND"])] : [.result(["success": true, "count": 1])]
        }
        let backend = harness.backend()
        #expect(try await backend.deleteNotification(id: "x")["status"] == "queued")
        harness.relay.setDesktop("pc-1", online: true)
        _ = try await backend.unreadCount()
        #expect(backend.pendingQueue().isEmpty)
    }

    @Test func theQueueKeepsTheNewestHundred() async throws {
        let harness = Harness()
        harness.relay.isUp = false
        let backend = harness.backend()
        for index in 0..<105 { _ = try await backend.deleteNotification(id: "n\(index)") }
        let queue = backend.pendingQueue()
        #expect(queue.count == 100)
        #expect(queue.first?["params"]?["notificationId"] == "n5" && queue.last?["params"]?["notificationId"] == "n104")
    }

    @Test func anOfflineDesktopBehindARelayWithoutPeerListsIsQueuedByTheRelay() async throws {
        let harness = Harness()
        harness.relay.answersGetPeers = false
        harness.relay.addDesktop("pc-1", online: false, behaviour: FakeDesktops.desktop)
        // The unanswered getPeers costs one timeout; the relay's peer-offline must then arrive
        // within the next (200 ms failed one run in a loaded full-suite run).
        let backend = harness.backend(desktop: "pc-1", timeout: .seconds(1))
        let result = try await backend.markAllRead()
        #expect(result["status"] == "queued" && result["queued_by"] == "relay")
        #expect(backend.pendingQueue().isEmpty)  // the relay has it; queueing it here too would run it twice
        harness.relay.setDesktop("pc-1", online: true)
        #expect(harness.relay.methods == ["notification.markAllAsRead"])
    }

    /// `read A B C` with the desktop offline behind a relay that keeps requests: the relay
    /// holds the first, the two never sent wait in Tether's queue, and each runs once.
    @Test func aReadOfSeveralIdsThatTheRelayQueuedLosesNone() async throws {
        let harness = Harness()
        harness.relay.answersGetPeers = false
        harness.relay.addDesktop("pc-1", online: false, behaviour: FakeDesktops.desktop)
        let backend = harness.backend(desktop: "pc-1", timeout: .milliseconds(200))
        let result = try await backend.markRead(ids: ["a", "b", "c"])
        #expect(result["status"] == "queued" && result["relay_holds"] == ["a"] && result["ids"] == ["a", "b", "c"], "\(result)")
        #expect(backend.pendingQueue().compactMap { $0["params"]?["notificationId"]?.string } == ["b", "c"])
        harness.relay.setDesktop("pc-1", online: true)  // the relay delivers "a"
        _ = try await backend.unreadCount()             // Tether sends "b" and "c" first
        let reads = harness.relay.requests.filter { $0["method"] == "notification.markAsRead" }.compactMap { $0["params"]?["notificationId"]?.string }
        #expect(reads == ["a", "b", "c"])
        #expect(backend.pendingQueue().isEmpty)
    }

    /// A queued command the relay took for the offline desktop while Tether drained its queue
    /// is the relay's to deliver: Tether does not send it again (a clearAll twice would clear
    /// what arrived in between).
    @Test func aQueuedCommandTheRelayTookIsNotSentAgain() async throws {
        let harness = Harness()
        harness.relay.isUp = false
        let backend = harness.backend(desktop: "pc-1", timeout: .milliseconds(200))
        #expect(try await backend.clearNotifications()["status"] == "queued")
        harness.relay.isUp = true
        harness.relay.answersGetPeers = false
        harness.relay.addDesktop("pc-1", online: false, behaviour: FakeDesktops.desktop)
        _ = try? await backend.unreadCount()  // drains: the relay takes the clearAll
        #expect(backend.pendingQueue().isEmpty)
        harness.relay.setDesktop("pc-1", online: true)
        _ = try await backend.unreadCount()
        #expect(harness.relay.methods.filter { $0 == "notification.clearAll" }.count == 1)
    }

    /// A proxy answering 502/503/504 to the upgrade (the relay behind it restarting) is a relay
    /// gone for a moment: a command is queued, and a watch reconnects instead of exiting.
    @Test func aRelayRestartingBehindAProxyIsRetried() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        harness.relay.upgradeStatus = 503
        let backend = harness.backend()
        #expect(try await backend.clearNotifications()["status"] == "queued")
        let events = Collected<Event>()
        let watching = Task { for try await event in backend.watch() { events.append(event) } }
        defer { watching.cancel() }
        try await events.wait { $0.contains { $0.data["state"] == "reconnecting" } }
        harness.relay.upgradeStatus = nil
        try await events.wait(timeout: .seconds(10)) { $0.contains { $0.data["state"] == "connected" } }
        // The queue goes out once it can: the watch drains it after saying it is connected.
        for _ in 0..<100 where !harness.relay.methods.contains("notification.clearAll") {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(harness.relay.methods.contains("notification.clearAll"))
        harness.relay.upgradeStatus = 404  // a URL that is no relay at all is still said at once
        #expect(await TetherError.from { _ = try await backend.unreadCount() }?.code == .configuration)
    }

    @Test func aHugeMarkedCountDoesNotTrap() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1") { _, params in
            [.result(["success": true, "markedCount": params["notificationId"] == "a" ? .int(.max) : 1])]
        }
        #expect(try await harness.backend().markRead(ids: ["a", "b"])["marked_count"] == .int(.max))
    }

    // MARK: Watch

    @Test func watchTurnsBothEnvelopeFamiliesIntoOneEventEach() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        // Kept by the relay while we were away: replayed when we register.
        harness.relay.keepForOffline("tether-test", try Fixture.entry("relay-frames", "offline-event")["originalMessage"]!)
        harness.relay.keepForOffline("tether-test", try Fixture.entry("relay-frames", "offline-response")["originalMessage"]!)
        let events = Collected<Event>()
        let watching = Task {
            for try await event in harness.backend().watch() { events.append(event) }
        }
        defer { watching.cancel() }
        try await events.wait { $0.contains { $0.type == .connectionState && $0.data["state"] == "connected" } }
        #expect(harness.relay.registrations.last == "tether-test")  // the stable id, not an ephemeral one

        for key in ["event-flat-object", "event-rpc-string", "event-flat-string", "event-terminal", "event-without-id", "event-rpc-object"] {
            let envelope = try #require(try Fixture.entry("relay-frames", key)["payload"])
            harness.relay.push(from: "pc-1", to: "tether-test", envelope: envelope)
        }
        let received = try await events.wait { $0.filter { $0.type == .notificationReceived }.count >= 4 }
            .filter { $0.type == .notificationReceived }
        try await Task.sleep(for: .milliseconds(50))
        #expect(events.all.filter { $0.type == .notificationReceived }.count == 4)
        #expect(received.map { $0.data["id"]?.string ?? "" }
            == ["notif-while-away", "notif-1795311063215-a1b2c3d4", "notif-2", "notif-3"])
        #expect(received[1].data == ["id": "notif-1795311063215-a1b2c3d4", "title": "Build done", "body": "main is green",
                                     "priority": "high", "read": false, "created_at": 1795311063215.0, "source": "pc",
                                     "data": ["url": "https://example.invalid/ci/42"]])
        #expect(received[1].raw?["type"] == "message")
    }

    @Test func watchReconnectsAndDrainsTheQueue() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.desktop)
        harness.relay.isUp = false
        #expect(try await harness.backend().clearNotifications()["status"] == "queued")
        harness.relay.isUp = true

        let events = Collected<Event>()
        let watching = Task {
            for try await event in harness.backend().watch() { events.append(event) }
        }
        defer { watching.cancel() }
        try await events.wait { $0.contains { $0.data["state"] == "connected" } }
        // Connecting drained the queue (beside the history reads of the watch's resync).
        try await Collected<Int>().wait { _ in
            harness.relay.methods.filter { $0 != "notification.getHistory" } == ["notification.clearAll"]
        }
        #expect(harness.relay.methods.first == "notification.clearAll")  // the queue goes first

        harness.relay.kick("tether-test")
        let states = try await events.wait(timeout: .seconds(5)) { events in
            events.filter { $0.data["state"] == "connected" }.count == 2
        }.compactMap { $0.data["state"]?.string }
        #expect(states == ["connecting", "connected", "reconnecting", "connected"])
        let reconnecting = try #require(events.all.first { $0.data["state"] == "reconnecting" })
        #expect(reconnecting.data["attempt"] == 1 && reconnecting.data["reason"]?.string?.contains("retrying in") == true)

        harness.relay.push(from: "pc-1", to: "tether-test", envelope: try #require(try Fixture.entry("relay-frames", "event-rpc-object")["payload"]))
        try await events.wait { $0.contains { $0.type == .notificationReceived } }
    }

    /// A burst of pushes while the consumer is behind (stdout piped into something slow) is
    /// held back, not dropped: the reader waits, and every notification arrives, in order.
    @Test func aBurstOfPushesWhileTheConsumerIsBehindLosesNone() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        let count = 2_000  // past the event channel (1,024) and the session's hand-off (256) together
        let events = Collected<Event>()
        let behind = Mutex(true)
        let watching = Task {
            for try await event in harness.backend().watch() {
                events.append(event)
                while behind.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            }
        }
        defer { watching.cancel() }
        try await events.wait { $0.contains { $0.type == .connectionState } }
        try await Task.sleep(for: .milliseconds(200))  // registered
        for index in 0..<count {
            harness.relay.push(from: "pc-1", to: "tether-test", envelope: [
                "type": "chainlesschain:event:notification",
                "payload": ["jsonrpc": "2.0", "method": "chainlesschain:notification:received",
                            "params": ["notificationId": .string("burst-\(index)"), "title": "t", "body": "b", "timestamp": 1795311063217]],
            ])
        }
        try await Task.sleep(for: .milliseconds(300))  // the burst is in, the consumer still behind
        behind.withLock { $0 = false }
        let received = try await events.wait(timeout: .seconds(20)) { $0.filter { $0.type == .notificationReceived }.count >= count }
            .filter { $0.type == .notificationReceived }.compactMap { $0.data["id"]?.string }
        #expect(received == (0..<count).map { "burst-\($0)" })
    }

    @Test func eventsWithoutFollowListsWhatIsThere() async throws {
        let harness = Harness()
        harness.relay.addDesktop("pc-1", behaviour: FakeDesktops.contract)
        var ids: [String] = []
        for try await event in harness.backend().events(EventsRequest()) { ids.append(event.data["id"]?.string ?? "") }
        #expect(ids == ["n-2", "n-1"])
    }
}
