import Foundation
import Logging
import Synchronization
import TetherCore
@testable import TetherNotification

/// Fake desktops: how each answers a request.
enum FakeDesktops {
    static func key(_ method: String) -> String { String(method.dropFirst("notification.".count)) }

    /// The client contract's shapes, as iOS reads them: payloads as objects, errors as strings.
    static let contract: FakeRelay.Behaviour = { method, _ in
        guard let result = try? Fixture.contract(key(method)) else { return [.error(.string("Unknown action: \(key(method))"), stringified: false)] }
        return [.result(result, stringified: false)]
    }

    /// The real desktop's shapes (notification-handler.js), stringified, errors as objects.
    /// `markAsRead` reads `id`/`ids` and marks everything without them; `updateSettings` reads
    /// only the nested `quietHours`.
    static let desktop: FakeRelay.Behaviour = { method, params in
        switch method {
        case "notification.markAsRead":
            let one = params["id"] != nil || params["ids"] != nil
            return [.result(["success": true, "markedCount": one ? 1 : "all"])]
        case "notification.updateSettings":
            return [.result((try? Fixture.desktop(params["quietHours"] != nil ? "updateSettings" : "updateSettings.ignoredFlatKeys")) ?? .null)]
        default:
            guard let result = try? Fixture.desktop(key(method)) else {
                return [.error(["code": -32002, "message": .string("Unknown action: \(key(method))")])]
            }
            return [.result(result)]
        }
    }

    /// Today's desktop on the relay path (protocols/notification.md §0).
    static let todays: FakeRelay.Behaviour = { _, _ in
        [.error(["code": -32603, "message": "Unknown command namespace: notification"])]
    }
}

/// Tests log errors only (the backend's info lines would drown the test output).
let quietLogger: Logger = {
    var logger = Logger(label: "test")
    logger.logLevel = .error
    return logger
}()

/// A relay, a state directory, and backends wired to them.
final class Harness: Sendable {
    let relay = FakeRelay()
    let stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-notif-\(UUID().uuidString)").path

    func backend(desktop: String? = nil, peerID: String? = "tether-test", timeout: Duration = .milliseconds(500)) -> NotificationRelayBackend {
        NotificationRelayBackend(
            configuration: .init(url: "ws://fake-relay:9001", peerID: peerID, desktop: desktop, profile: "desk",
                                 stateDirectory: stateDirectory, timeout: timeout),
            logger: quietLogger, connector: { [relay] _ in try relay.connect() })
    }

    deinit { try? FileManager.default.removeItem(atPath: stateDirectory) }
}

/// Values gathered by a background task, for the test to wait on.
final class Collected<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }

    /// Waits (polling) until `predicate` holds for what is gathered; fails after `timeout`.
    @discardableResult
    func wait(timeout: Duration = .seconds(5), until predicate: ([Value]) -> Bool) async throws -> [Value] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let current = all
            if predicate(current) { return current }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TimedOut(count: all.count)
    }

    struct TimedOut: Error { let count: Int }
}

extension TetherError {
    /// The `TetherError` a throwing call ends with (nil when it succeeds or throws another type).
    static func from(_ body: () async throws -> Void) async -> TetherError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? TetherError
        }
    }
}
