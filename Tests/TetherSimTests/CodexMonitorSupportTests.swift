import Foundation
import Testing
@testable import TetherSim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The C calls, named apart from the client's own `close()`/`send(_:)`.
private func systemClose(_ fd: Int32) {
    _ = close(fd)
}

private func systemSend(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Int {
    #if os(Linux)
    send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
    #else
    send(fd, buffer.baseAddress, buffer.count, 0)
    #endif
}

private func streamSocket() -> Int32 {
    #if os(Linux)
    socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    socket(AF_INET, SOCK_STREAM, 0)
    #endif
}

// MARK: - A tiny line-socket client

/// A blocking TCP client whose reads run on their own thread (never on the cooperative pool),
/// handing complete `\n`-terminated lines to async tests.
final class CodexMonitorLineClient: @unchecked Sendable {
    enum Read {
        case line(String)
        case closed
        case timedOut
    }

    struct ClientError: Error, CustomStringConvertible {
        var description: String
    }

    private struct Inbox {
        var lines: [String] = []
        var closed = false
        var waiter: (id: Int, continuation: CheckedContinuation<Read, Never>)?
        var nextWaiter = 0
    }

    private let fd: Int32
    private let inbox = Locked(Inbox())
    private let readerDone = DispatchSemaphore(value: 0)
    private let closedOnce = Locked(false)
    /// Every line read so far, in order.
    private(set) var transcript = Locked<[String]>([])

    init(port: Int) throws {
        fd = streamSocket()
        guard fd >= 0 else { throw ClientError(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            systemClose(fd)
            throw ClientError(description: "connect() failed: \(errno)")
        }
        let thread = Thread { [self] in readLoop() }
        thread.start()
    }

    private func readLoop() {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            buffer += chunk[0..<count]
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeFirst(newline + 1)
                deliver(.line(line))
            }
        }
        deliver(.closed)
        readerDone.signal()
    }

    private func deliver(_ read: Read) {
        let waiter = inbox.withLock { inbox -> CheckedContinuation<Read, Never>? in
            switch read {
            case .line(let line):
                transcript.withLock { $0.append(line) }
                if let waiter = inbox.waiter {
                    inbox.waiter = nil
                    return waiter.continuation
                }
                inbox.lines.append(line)
            default:
                inbox.closed = true
                if let waiter = inbox.waiter {
                    inbox.waiter = nil
                    return waiter.continuation
                }
            }
            return nil
        }
        waiter?.resume(returning: read)
    }

    /// The next line, `.closed` at EOF, or `.timedOut`.
    func read(timeout: Duration = .seconds(5)) async -> Read {
        let id = inbox.withLock { inbox -> Int in
            inbox.nextWaiter += 1
            return inbox.nextWaiter
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            let waiter = inbox.withLock { inbox -> CheckedContinuation<Read, Never>? in
                guard let waiter = inbox.waiter, waiter.id == id else { return nil }
                inbox.waiter = nil
                return waiter.continuation
            }
            waiter?.resume(returning: .timedOut)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready = inbox.withLock { inbox -> Read? in
                if !inbox.lines.isEmpty { return .line(inbox.lines.removeFirst()) }
                if inbox.closed { return .closed }
                inbox.waiter = (id, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// The next line, parsed; fails the test on EOF or timeout.
    func next(timeout: Duration = .seconds(5), sourceLocation: SourceLocation = #_sourceLocation) async throws -> CodexMonitorLine {
        switch await read(timeout: timeout) {
        case .line(let text):
            return try CodexMonitorLine(text)
        case .closed:
            throw ClientError(description: "connection closed while waiting for a line")
        case .timedOut:
            throw ClientError(description: "timed out waiting for a line")
        }
    }

    /// Reads until `predicate` matches; returns every line read, the match last.
    func readUntil(timeout: Duration = .seconds(5), _ predicate: (CodexMonitorLine) -> Bool) async throws -> [CodexMonitorLine] {
        var lines: [CodexMonitorLine] = []
        while true {
            let line = try await next(timeout: timeout)
            lines.append(line)
            if predicate(line) { return lines }
        }
    }

    /// Sends a request and reads up to its response; returns the lines before it and the response.
    func call(_ id: Int, _ method: String, _ params: String? = nil) async throws -> (before: [CodexMonitorLine], response: CodexMonitorLine) {
        send(#"{"id":\#(id),"method":"\#(method)""# + (params.map { #","params":\#($0)"# } ?? "") + "}")
        let lines = try await readUntil { $0.id == id && $0.method == nil }
        return (Array(lines.dropLast()), lines.last!)
    }

    /// Reads events up to the `app-server-event` whose message has this method.
    func until(event method: String, timeout: Duration = .seconds(5)) async throws -> [CodexMonitorLine] {
        try await readUntil(timeout: timeout) { $0.eventMethod == method }
    }

    func send(_ line: String) {
        sendRaw(Array((line + "\n").utf8))
    }

    func sendRaw(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { systemSend(fd, $0) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// True once the peer closed, within `timeout`, after draining any lines still buffered.
    func isClosed(within timeout: Duration = .seconds(5)) async -> Bool {
        while true {
            switch await read(timeout: timeout) {
            case .closed: return true
            case .timedOut: return false
            case .line: continue
            }
        }
    }

    func close() {
        let first = closedOnce.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        readerDone.wait()
        systemClose(fd)
    }

    deinit {
        close()
    }
}

/// One parsed line from the daemon.
struct CodexMonitorLine: @unchecked Sendable, CustomStringConvertible {
    let text: String
    let object: [String: Any]

    init(_ text: String) throws {
        self.text = text
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw CodexMonitorLineClient.ClientError(description: "not a JSON object: \(text)")
        }
        self.object = object
    }

    var description: String { text }

    var id: Int? { object["id"] as? Int }
    var method: String? { object["method"] as? String }
    var params: [String: Any]? { object["params"] as? [String: Any] }
    var result: Any? { object["result"] }
    var resultObject: [String: Any]? { object["result"] as? [String: Any] }
    var errorMessage: String? { (object["error"] as? [String: Any])?["message"] as? String }

    /// `app-server-event`'s `message`.
    var event: [String: Any]? {
        method == "app-server-event" ? params?["message"] as? [String: Any] : nil
    }

    var eventMethod: String? { event?["method"] as? String }
    var eventParams: [String: Any]? { event?["params"] as? [String: Any] }
    var workspaceID: String? { params?["workspace_id"] as? String }

    /// Walks objects by key and arrays by decimal index: `value("result", "result", "thread", "id")`.
    func value(_ path: String...) -> Any? {
        var current: Any? = object
        for key in path {
            if let object = current as? [String: Any] {
                current = object[key]
            } else if let array = current as? [Any], let index = Int(key), array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }

    func string(_ path: String...) -> String? {
        var current: Any? = object
        for key in path {
            if let object = current as? [String: Any] {
                current = object[key]
            } else if let array = current as? [Any], let index = Int(key), array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current as? String
    }
}

extension [CodexMonitorLine] {
    var eventMethods: [String] { compactMap(\.eventMethod) }
}

// MARK: - Running a simulator for a test

enum CodexMonitorHarness {
    static let token = "s3cret"

    /// Starts a simulator, runs `body` with a connected (and, with a token, authenticated) client, stops.
    static func run(
        _ options: CodexMonitorSimulator.Options = .init(token: token),
        authenticate: Bool = true,
        _ body: (CodexMonitorSimulator, CodexMonitorLineClient, Int) async throws -> Void
    ) async throws {
        let simulator = CodexMonitorSimulator(options: options)
        let (_, port) = try await simulator.start()
        let client = try CodexMonitorLineClient(port: port)
        do {
            if authenticate, let token = options.token {
                let (_, response) = try await client.call(1, "auth", #"{"token":"\#(token)"}"#)
                #expect(response.value("result", "ok") as? Bool == true)
            }
            try await body(simulator, client, port)
        } catch {
            client.close()
            await simulator.stop()
            throw error
        }
        client.close()
        await simulator.stop()
    }

    /// Connects `ws-1` and starts a thread; returns the thread id.
    static func startThread(_ client: CodexMonitorLineClient, firstID: Int = 2) async throws -> String {
        _ = try await client.call(firstID, "connect_workspace", #"{"id":"ws-1"}"#)
        let (_, response) = try await client.call(firstID + 1, "start_thread", #"{"workspaceId":"ws-1"}"#)
        return try #require(response.string("result", "result", "thread", "id"))
    }

    static func send(_ client: CodexMonitorLineClient, id: Int, thread: String, text: String,
                     extra: String = "") async throws -> CodexMonitorLine {
        let params = #"{"workspaceId":"ws-1","threadId":"\#(thread)","text":"\#(text)"\#(extra)}"#
        return try await client.call(id, "send_user_message", params).response
    }
}

// MARK: - Unit tests of the pieces

@Suite("CodexMonitor simulator: parsing and keywords")
struct CodexMonitorSupportTests {
    @Test("the line parser keeps integer, float, string and boolean ids apart")
    func parserKeepsIDTypes() throws {
        func id(_ line: String) -> Int? {
            CodexMonitorSimulator.Wire.request(fromLine: Array(line.utf8))?.responseID
        }
        #expect(id(#"{"id":7,"method":"ping"}"#) == 7)
        #expect(id(#"{"id":0,"method":"ping"}"#) == 0)
        #expect(id(#"{"id":7.0,"method":"ping"}"#) == nil)
        #expect(id(#"{"id":"7","method":"ping"}"#) == nil)
        #expect(id(#"{"id":-1,"method":"ping"}"#) == nil)
        #expect(id(#"{"id":true,"method":"ping"}"#) == nil)
        #expect(id(#"{"method":"ping"}"#) == nil)
        #expect(CodexMonitorSimulator.Wire.request(fromLine: Array(#"{"id":1,"method":"ping""#.utf8)) == nil)
        #expect(CodexMonitorSimulator.Wire.request(fromLine: Array("[1,2]".utf8)) == nil)
        let escaped = CodexMonitorSimulator.Wire.request(fromLine: Array(#"{"method":"x","params":"a\"b\u00e9\ud83d\ude00"}"#.utf8))
        #expect(escaped?.params == .string("a\"bé😀"))
    }

    @Test("prompts select scripts by keyword")
    func keywords() {
        #expect(CodexMonitorScenario.forPrompt("hello there") == .reply)
        #expect(CodexMonitorScenario.forPrompt("run the tests") == .command)
        #expect(CodexMonitorScenario.forPrompt("run the failing tests") == .failingCommand)
        #expect(CodexMonitorScenario.forPrompt("edit the file") == .fileChange)
        #expect(CodexMonitorScenario.forPrompt("please wait") == .interrupt)
        #expect(CodexMonitorScenario.forPrompt("make it fail") == .failedTurn)
        #expect(CodexMonitorScenario.forPrompt("noise please") == .noise)
        #expect(CodexMonitorScenario.forPrompt("long 250") == .long(250))
        #expect(CodexMonitorScenario(name: "long:3") == .long(3))
        #expect(CodexMonitorScenario(name: "file-change") == .fileChange)
        #expect(CodexMonitorScenario(name: "bogus") == nil)
    }
}
