import TetherCodexProtocol
import Foundation
import Logging
import Synchronization
import TetherCore
import TetherNet
@testable import TetherCodexMonitor
import TetherStreaming

let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// Recorded-style daemon output under Transcripts/: one line per message the daemon sent
/// (notifications and responses interleaved, as on the wire).
enum Transcript {
    static func lines(_ name: String) throws -> [JSONValue] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "jsonl", subdirectory: "Transcripts") else {
            throw Missing(name: name)
        }
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    /// The notifications among the lines, as the RPC layer hands them to the consumer.
    static func notifications(_ name: String) throws -> [(method: String, params: JSONValue)] {
        try lines(name).compactMap { line in
            if case .notification(let method, let params) = CodexMonitorRPC.Message.classify(line) { return (method, params) }
            return nil
        }
    }

    static func map(_ name: String, into mapper: inout CodexAppServerMapper) throws -> [Event] {
        try notifications(name).flatMap { mapper.map(method: $0.method, params: $0.params) }
    }

    struct Missing: Error { let name: String }
}

extension Array where Element == Event {
    func of(_ type: EventType) -> [Event] { filter { $0.type == type } }

    var statuses: [String] { of(.sessionStatus).compactMap { $0.data["status"]?.string } }

    /// Text assembled from deltas, per part.
    var assembledDeltas: [String: String] {
        var texts: [String: String] = [:]
        for event in of(.partDelta) { texts[event.part!, default: ""] += event.data["delta"]?.string ?? "" }
        return texts
    }

    /// `type|part|turn` of each event: what must not repeat.
    var identities: [String] { map { "\($0.type.rawValue)|\($0.part ?? "")|\($0.turn ?? "")|\($0.data["id"]?.string ?? "")" } }
}

func json(_ text: String) -> JSONValue {
    try! JSONParser.parse(text)
}

// MARK: - In-memory lines

/// A queue of lines with one async reader.
final class LineQueue: Sendable {
    private struct State {
        var lines: [[UInt8]] = []
        var finished = false
        var error: NetError?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
    }

    private let state = Mutex(State())

    func push(_ line: [UInt8]) {
        let waiter: CheckedContinuation<[UInt8]?, any Error>? = state.withLock { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.lines.append(line)
            return nil
        }
        waiter?.resume(returning: line)
    }

    func finish(throwing error: NetError? = nil) {
        let waiter: CheckedContinuation<[UInt8]?, any Error>? = state.withLock { state in
            guard !state.finished else { return nil }
            state.finished = true
            state.error = error
            defer { state.waiter = nil }
            return state.lines.isEmpty ? state.waiter : nil
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: nil) }
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            enum Outcome { case line([UInt8]), end(NetError?), wait }
            let outcome: Outcome = state.withLock { state in
                if !state.lines.isEmpty { return .line(state.lines.removeFirst()) }
                if state.finished { return .end(state.error) }
                state.waiter = continuation
                return .wait
            }
            switch outcome {
            case .line(let line): continuation.resume(returning: line)
            case .end(let error?): continuation.resume(throwing: error)
            case .end(nil): continuation.resume(returning: nil)
            case .wait: break
            }
        }
    }
}

/// The client's end of an in-memory line connection; the test plays the daemon on the other.
final class MemoryLineConnection: LineConnection {
    /// Daemon → client.
    let inbound = LineQueue()
    /// Client → daemon.
    let outbound = LineQueue()

    func send(_ line: [UInt8]) async throws {
        guard !outbound.isFinished else { throw NetError(.interrupted, url: "memory", detail: "closed") }
        outbound.push(line)
    }

    func receive() async throws -> [UInt8]? { try await inbound.next() }

    /// One line per read, or the lines delivered together (`deliver(together:)`) in one.
    func receiveBatch() async throws -> [[UInt8]]? {
        try await inbound.next()?.split(separator: UInt8(ascii: "\n")).map(Array.init)
    }

    func close() {
        inbound.finish()
        outbound.finish()
    }

    /// The daemon sends a line.
    func deliver(_ text: String) { inbound.push(Array(text.utf8)) }

    /// The daemon sends lines that the client reads at once, as from one socket read.
    func deliver(together texts: [String]) { inbound.push(Array(texts.joined(separator: "\n").utf8)) }

    /// The next request the client sent, parsed.
    func nextRequest() async throws -> JSONValue? {
        guard let line = try await outbound.next() else { return nil }
        return try JSONParser.parse(line)
    }
}

/// A scripted CodexMonitor daemon on an in-memory connection: every request the client sends is
/// recorded and handed to `handler`, which answers through the daemon's helpers.
final class FakeDaemon: Sendable {
    typealias Handler = @Sendable (_ request: JSONValue, _ daemon: FakeDaemon) async -> Void

    let connection = MemoryLineConnection()
    private let recorded = Mutex<[JSONValue]>([])

    init(_ handler: @escaping Handler) {
        Task { [connection] in
            while let request = try? await connection.nextRequest() {
                recorded.withLock { $0.append(request) }
                await handler(request, self)
            }
        }
    }

    var requests: [JSONValue] { recorded.withLock { $0 } }
    var methods: [String] { requests.compactMap { $0["method"]?.string } }

    func requests(_ method: String) -> [JSONValue] { requests.filter { $0["method"]?.string == method } }

    func send(_ line: String) { connection.deliver(line) }

    func respond(_ request: JSONValue, _ result: String) {
        send("{\"id\":\(request["id"]!.serialized),\"result\":\(result)}")
    }

    func fail(_ request: JSONValue, _ message: String) {
        send("{\"id\":\(request["id"]!.serialized),\"error\":{\"message\":\"\(message)\"}}")
    }

    /// Wraps a raw app-server message as the daemon does.
    func event(_ message: String, workspace: String = "ws-1") {
        send("{\"method\":\"app-server-event\",\"params\":{\"workspace_id\":\"\(workspace)\",\"message\":\(message)}}")
    }

    /// Drops the connection from the daemon's side.
    func hangUp() { connection.inbound.finish() }

    /// Answers the requests every scenario needs (auth, list_workspaces, connect_workspace) and
    /// returns false for anything else.
    func answerBasics(_ request: JSONValue, token: String? = "s3cret", workspaces: String = FakeDaemon.oneWorkspace) -> Bool {
        switch request["method"]?.string {
        case "auth":
            if token == nil {
                fail(request, "unknown method: auth")
            } else if request["params"]?["token"]?.string == token {
                respond(request, #"{"ok":true}"#)
            } else {
                fail(request, "invalid token")
            }
        case "ping": respond(request, #"{"ok":true}"#)
        case "list_workspaces": respond(request, workspaces)
        case "connect_workspace": respond(request, #"{"ok":true}"#)
        default: return false
        }
        return true
    }

    static let oneWorkspace = #"[{"id":"ws-1","name":"demo","path":"/srv/demo","connected":true,"kind":"main","parentId":null,"worktree":null,"settings":{"sidebarCollapsed":false}}]"#
}

extension CodexMonitorBackend {
    /// A backend whose every connection is the next of `daemons` (the last one repeats).
    static func test(_ daemons: [FakeDaemon], token: String? = "s3cret", workspace: String? = nil,
                     configure: (inout Configuration) -> Void = { _ in }) -> CodexMonitorBackend {
        var configuration = Configuration(host: "127.0.0.1", port: 4732, token: token, workspace: workspace, profile: "monitor",
                                          requestTimeout: .seconds(5), settle: .milliseconds(100),
                                          reconnect: .init(backoff: [.milliseconds(10)], jitter: 0))
        configure(&configuration)
        let next = Mutex(0)
        return CodexMonitorBackend(configuration: configuration, logger: quietLogger) { _, _ in
            let index = next.withLock { index in
                defer { index += 1 }
                return Swift.min(index, daemons.count - 1)
            }
            return daemons[index].connection
        }
    }
}

/// Collects a stream's events, failing after `timeout`.
func collect(_ stream: EventStream, timeout: Duration = .seconds(10),
             until stop: @escaping @Sendable (Event) -> Bool = { _ in false }) async throws -> [Event] {
    try await withThrowingTaskGroup(of: [Event]?.self) { group in
        group.addTask {
            var events: [Event] = []
            for try await event in stream {
                events.append(event)
                if stop(event) { break }
            }
            return events
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let first = try await group.next()!
        group.cancelAll()
        guard let events = first else { throw TimedOut() }
        return events
    }
}

struct TimedOut: Error {}
