import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport
import TetherStreaming

/// `tether notifications …` against the notification relay and desktop simulator.
@Suite(.serialized) struct NotificationCLITests {
    func withRelay(_ options: NotificationSimulator.Options = .init(), state: String? = nil,
                   _ body: (NotificationSimulator, [String], [String: String]) async throws -> Void) async throws {
        let simulator = NotificationSimulator(options: options)
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.n]
            backend = "notification"
            url = "\(url.absoluteString)"
            """)
        let env = ["XDG_STATE_HOME": state ?? NSTemporaryDirectory() + "tether-state-\(UUID().uuidString)"]
        try await body(simulator, ["--config", config.path, "-p", "n"], env)
    }

    func json(_ result: TetherProcess.Result) throws -> JSONValue {
        try JSONParser.parse(result.lines.last ?? "")
    }

    @Test(arguments: [NotificationSimulator.Shape.contract, .desktop])
    func everyMethodInBothShapes(shape: NotificationSimulator.Shape) async throws {
        try await withRelay(.init(shape: shape)) { simulator, global, env in
            func run(_ arguments: [String]) async throws -> TetherProcess.Result {
                let result = try await TetherProcess.run(["notifications"] + arguments + global, environment: env)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                return result
            }
            let listed = try await run(["list"]).events()
            #expect(listed.count == 3)
            #expect(listed.allSatisfy { $0.type == .notificationReceived && $0.data["title"] != nil })
            let unread = try await run(["list", "--unread"]).events()
            #expect(unread.count == 2)
            let page = try await run(["list", "--limit", "1", "--offset", "1"]).events()
            #expect(page.count == 1)
            let counted = try json(try await run(["count"]))
            #expect(counted["unread"] == 2)

            let target = try #require(unread.first?.data["id"]?.string)
            _ = try await run(["read", target])
            // Both keys go out, so a desktop that reads only `id` never marks everything read.
            let read = try #require(simulator.commands().last { $0.method == "notification.markAsRead" })
            #expect(read.paramsJSON.contains("\"notificationId\"") && read.paramsJSON.contains("\"id\""))
            #expect(simulator.notification(id: target)?.read == true)
            #expect(simulator.notifications().filter { !$0.read }.count == 1)

            _ = try await run(["read-all"])
            #expect(simulator.notifications().allSatisfy { $0.read })
            _ = try await run(["settings"])
            _ = try await run(["settings", "--set", "enabled=false"])
            let sent = try json(try await run(["send", "--title", "Hello", "--body", "from tether", "--priority", "high"]))
            #expect(sent["status"] != nil)
            _ = try await run(["push", "--title", "To phone", "--body", "b"])
            _ = try await run(["broadcast", "--title", "Everyone", "--body", "b"])
            _ = try await run(["delete", target])
            #expect(simulator.notification(id: target) == nil)
            _ = try await run(["clear"])
            #expect(simulator.notifications().isEmpty)
        }
    }

    @Test func aPushSentTwiceIsReceivedOnce() async throws {
        try await withRelay { simulator, global, env in
            let watch = try TetherProcess(["notifications", "watch"] + global, environment: env)
            // Wait until the watch itself has registered (one-shot sessions use `stable~suffix` ids).
            for _ in 0..<100 {
                if simulator.peers().contains(where: { $0.deviceType != "desktop" && !$0.peerID.contains("~") }) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            try simulator.push(title: "Build done", body: "green", notificationID: "n-42", twice: true)
            let line = try await watch.waitForEvent(.notificationReceived)
            #expect(line.data["id"] == "n-42")
            try await Task.sleep(for: .milliseconds(500))
            watch.interrupt()
            let result = try await watch.finish()
            #expect(try result.events().filter { $0.type == .notificationReceived }.count == 1)
        }
    }

    /// The relay answers but the desktop is offline: `check` is not a pass. Text mode marked it
    /// ✓ and exited 69 with nothing said; now ✗ and the problem on stderr, in both formats.
    @Test func checkSaysWhyAReachableRelayIsNotUsable() async throws {
        try await withRelay(.init(desktopOnline: false)) { _, global, env in
            for format in ["text", "jsonl"] {
                let result = try await TetherProcess.run(["check", "-o", format] + global, environment: env)
                #expect(result.status == 69)
                #expect(!result.stdout.contains("✓"), "\(result.stdout)")
                #expect(result.stderr.contains("answered but is not usable"), "\(result.stderr)")
                #expect(result.stderr.contains("desktop"), "\(result.stderr)")
            }
        }
    }

    /// `--set =` (no key) trapped on an empty split; a key is required.
    @Test func settingsRefuseAnAssignmentWithoutAKey() async throws {
        for assignment in ["=", "=x", "novalue"] {
            let result = try await TetherProcess.run(["notifications", "settings", "--set", assignment])
            #expect(result.status == 64, "\(assignment): \(result.stderr)")
            #expect(result.stderr.contains("KEY=VALUE"), "\(result.stderr)")
        }
    }

    @Test func theOfflineQueueSurvivesARestartAndDrainsInOrder() async throws {
        let state = NSTemporaryDirectory() + "tether-state-\(UUID().uuidString)"
        try await withRelay(.init(desktopOnline: false), state: state) { simulator, global, env in
            let ids = simulator.notifications().map(\.id)
            for arguments in [["read", ids[0]], ["delete", ids[1]], ["read-all"]] {
                let result = try await TetherProcess.run(["notifications"] + arguments + global, environment: env)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stdout.contains("queued"))
            }
            // A later, separate process sees the same queue.
            let queue = try await TetherProcess.run(["notifications", "queue"] + global, environment: env)
            #expect(queue.lines.count == 3)
            #expect(queue.lines.first?.contains("markAsRead") == true)

            simulator.setDesktopOnline(true)
            let count = try await TetherProcess.run(["notifications", "count"] + global, environment: env)
            #expect(count.status == 0, "\(count.stderr)")
            let drained = simulator.commands().filter { !$0.duplicate }.map(\.method)
            let order = drained.filter { ["notification.markAsRead", "notification.delete", "notification.markAllAsRead"].contains($0) }
            #expect(order == ["notification.markAsRead", "notification.delete", "notification.markAllAsRead"])
            let after = try await TetherProcess.run(["notifications", "queue"] + global, environment: env)
            #expect(after.lines.isEmpty)
        }
    }

    @Test func aDesktopWithoutTheNamespaceIsNamedPlainly() async throws {
        try await withRelay(.init(unknownNamespace: true)) { _, global, env in
            let result = try await TetherProcess.run(["notifications", "count"] + global, environment: env)
            #expect(result.status != 0)
            #expect(result.stderr.contains("Unknown command namespace: notification"))
        }
    }
}
