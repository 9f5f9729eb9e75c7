import Foundation
@testable import TetherSim
#if canImport(Glibc)
import Glibc
private let posixClose = Glibc.close
private let posixSend = Glibc.send
private let posixConnect = Glibc.connect
private let posixStream = Int32(SOCK_STREAM.rawValue)
private let posixNoSignal = Int32(MSG_NOSIGNAL)
#elseif canImport(Darwin)
import Darwin
private let posixClose = Darwin.close
private let posixSend = Darwin.send
private let posixConnect = Darwin.connect
private let posixStream = SOCK_STREAM
private let posixNoSignal: Int32 = 0
#endif

struct PeerFailure: Error, CustomStringConvertible {
    var description: String
}

/// What a codex app-server test peer received: every JSON-RPC message, decoded, in order.
/// Tests take messages out by predicate (the others stay pending, in order).
final class AppServerInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var pending: [[String: Any]] = []
    private var all: [String] = []
    private var ended = false

    func append(_ text: String) {
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        lock.withLock {
            all.append(text)
            pending.append(object ?? ["<unparseable>": text])
        }
    }

    func end() { lock.withLock { ended = true } }
    var isEnded: Bool { lock.withLock { ended } }
    var received: [String] { lock.withLock { all } }

    /// Takes the first pending message that matches.
    func next(_ what: String, timeout: Duration = .seconds(5), where match: ([String: Any]) -> Bool) async throws -> [String: Any] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let found = lock.withLock { () -> [String: Any]? in
                guard let index = pending.firstIndex(where: match) else { return nil }
                return pending.remove(at: index)
            }
            if let found { return found }
            guard ContinuousClock.now < deadline else {
                throw PeerFailure(description: "timed out waiting for \(what); received:\n  " + received.joined(separator: "\n  "))
            }
            try await Task.sleep(for: .milliseconds(3))
        }
    }

    /// Takes every message up to and including the first that matches, in order.
    func collect(until what: String, timeout: Duration = .seconds(5), _ match: @escaping ([String: Any]) -> Bool) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let found = lock.withLock { () -> [[String: Any]]? in
                guard let index = pending.firstIndex(where: match) else { return nil }
                defer { pending.removeSubrange(...index) }
                return Array(pending[...index])
            }
            if let found { return found }
            guard ContinuousClock.now < deadline else {
                throw PeerFailure(description: "timed out waiting for \(what); received:\n  " + received.joined(separator: "\n  "))
            }
            try await Task.sleep(for: .milliseconds(3))
        }
    }

    /// Takes every pending message (in order).
    func takeAll() -> [[String: Any]] {
        lock.withLock {
            defer { pending = [] }
            return pending
        }
    }

    /// Messages pending after `window`, none taken.
    func pendingCount(after window: Duration, where match: @escaping ([String: Any]) -> Bool) async throws -> Int {
        try await Task.sleep(for: window)
        return lock.withLock { pending.count(where: match) }
    }
}

/// A connection to the simulator that sends JSON-RPC text and fills an inbox.
protocol AppServerPeer: AnyObject, Sendable {
    var inbox: AppServerInbox { get }
    func sendText(_ text: String) throws
}

extension AppServerPeer {
    func send(_ object: [String: Any]) throws {
        try sendText(String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
    }

    /// Sends a request and waits for its response (result or error).
    @discardableResult
    func call(_ id: Int, _ method: String, _ params: [String: Any]? = [:]) async throws -> [String: Any] {
        var message: [String: Any] = ["id": id, "method": method]
        if let params { message["params"] = params }
        try send(message)
        return try await response(id)
    }

    func response(_ id: Int, timeout: Duration = .seconds(5)) async throws -> [String: Any] {
        try await inbox.next("the response to \(id)", timeout: timeout) { $0["method"] == nil && ($0["id"] as? Int) == id }
    }

    func notification(_ method: String, timeout: Duration = .seconds(5)) async throws -> [String: Any] {
        try await inbox.next(method, timeout: timeout) { ($0["method"] as? String) == method && $0["id"] == nil }
    }

    func serverRequest(_ method: String, timeout: Duration = .seconds(5)) async throws -> [String: Any] {
        try await inbox.next("request \(method)", timeout: timeout) { ($0["method"] as? String) == method && $0["id"] != nil }
    }

    func initialize(_ name: String = "tests", capabilities: [String: Any]? = nil) async throws {
        var params: [String: Any] = ["clientInfo": ["name": name, "title": NSNull(), "version": "0.0.1"]]
        if let capabilities { params["capabilities"] = capabilities }
        let reply = try await call(1, "initialize", params)
        guard reply["result"] != nil else { throw PeerFailure(description: "initialize failed: \(reply)") }
        try send(["method": "initialized"])
        _ = try await notification("remoteControl/status/changed")
    }

    /// `thread/start`; the new thread's id.
    func startThread(_ id: Int, _ params: [String: Any] = ["cwd": "/srv/project", "approvalPolicy": "on-request", "sandbox": "workspace-write"]) async throws -> String {
        let reply = try await call(id, "thread/start", params)
        guard let threadID = ((reply["result"] as? [String: Any])?["thread"] as? [String: Any])?["id"] as? String else {
            throw PeerFailure(description: "thread/start failed: \(reply)")
        }
        _ = try await inbox.next("thread/started") { ($0["method"] as? String) == "thread/started" && string($0, "params", "thread", "id") == threadID }
        return threadID
    }

    /// `turn/start` with one text input; the turn's id.
    func startTurn(_ id: Int, thread: String, _ text: String, extra: [String: Any] = [:]) async throws -> String {
        var params: [String: Any] = ["threadId": thread, "input": [["type": "text", "text": text, "text_elements": [Any]()]]]
        params.merge(extra) { $1 }
        let reply = try await call(id, "turn/start", params)
        guard let turnID = ((reply["result"] as? [String: Any])?["turn"] as? [String: Any])?["id"] as? String else {
            throw PeerFailure(description: "turn/start failed: \(reply)")
        }
        return turnID
    }

    func answer(_ requestID: Int, _ result: [String: Any]) throws {
        try send(["id": requestID, "result": result])
    }
}

// MARK: - WebSocket

/// A minimal RFC 6455 client over a POSIX socket (TCP or unix), reading on a thread of its own.
final class AppServerWSPeer: AppServerPeer, @unchecked Sendable {
    let inbox = AppServerInbox()
    private let fd: Int32
    private let writeLock = NSLock()
    private let headLock = NSLock()
    private var head: String?
    private var raw: [UInt8] = []
    private var fragments: [UInt8] = []

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit { _ = posixClose(fd) }

    static func connect(port: Int, path: String = "/", headers: [String] = []) async throws -> AppServerWSPeer {
        try await handshake(open(port: port), host: "127.0.0.1:\(port)", path: path, headers: headers)
    }

    static func connect(unixPath: String) async throws -> AppServerWSPeer {
        try await handshake(open(unixPath: unixPath), host: "localhost", path: "/", headers: [])
    }

    private static func handshake(_ peer: AppServerWSPeer, host: String, path: String, headers: [String]) async throws -> AppServerWSPeer {
        var request = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for header in headers { request += header + "\r\n" }
        try peer.write(Array((request + "\r\n").utf8))
        let head = try await peer.responseHead()
        guard head.hasPrefix("HTTP/1.1 101") else { throw PeerFailure(description: "handshake refused: \(head)") }
        return peer
    }

    /// The 101's head (for the header tests).
    private(set) var handshakeHead = ""

    private func responseHead() async throws -> String {
        let deadline = ContinuousClock.now.advanced(by: .seconds(5))
        while ContinuousClock.now < deadline {
            if let head = headLock.withLock({ head }) {
                handshakeHead = head
                return head
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw PeerFailure(description: "no handshake response")
    }

    private static func open(port: Int) throws -> AppServerWSPeer {
        let fd = socket(AF_INET, posixStream, 0)
        guard fd >= 0 else { throw PeerFailure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { posixConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            _ = posixClose(fd)
            throw PeerFailure(description: "connect() to port \(port) failed")
        }
        return start(fd)
    }

    private static func open(unixPath: String) throws -> AppServerWSPeer {
        let fd = socket(AF_UNIX, posixStream, 0)
        guard fd >= 0 else { throw PeerFailure(description: "socket() failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(unixPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { posixConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            _ = posixClose(fd)
            throw PeerFailure(description: "connect() to \(unixPath) failed")
        }
        return start(fd)
    }

    private static func start(_ fd: Int32) -> AppServerWSPeer {
        let peer = AppServerWSPeer(fd: fd)
        Thread { [peer] in peer.readLoop() }.start()
        return peer
    }

    func sendText(_ text: String) throws {
        try write(NotificationWSClient.frame(opcode: 0x1, payload: Array(text.utf8), mask: (0..<4).map { _ in UInt8.random(in: 0...255) }))
    }

    func sendBinary(_ bytes: [UInt8]) throws {
        try write(NotificationWSClient.frame(opcode: 0x2, payload: bytes, mask: [1, 2, 3, 4]))
    }

    /// Drops the TCP connection without a close frame (a cut link).
    func cut() {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    private func write(_ bytes: [UInt8]) throws {
        try writeLock.withLock {
            var sent = 0
            try bytes.withUnsafeBytes { raw in
                while sent < raw.count {
                    let count = posixSend(fd, raw.baseAddress! + sent, raw.count - sent, posixNoSignal)
                    guard count > 0 else { throw PeerFailure(description: "send() failed") }
                    sent += count
                }
            }
        }
    }

    private func readLoop() {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else {
                inbox.end()
                return
            }
            raw += chunk[0..<count]
            if headLock.withLock({ head }) == nil {
                guard let end = raw.firstRange(of: [13, 10, 13, 10]) else { continue }
                let text = String(decoding: raw[..<end.lowerBound], as: UTF8.self)
                raw.removeSubrange(..<end.upperBound)
                headLock.withLock { head = text }
            }
            drainFrames()
        }
    }

    private func drainFrames() {
        while raw.count >= 2 {
            let fin = raw[0] & 0x80 != 0
            let opcode = raw[0] & 0x0F
            var length = Int(raw[1] & 0x7F)
            var offset = 2
            if length == 126 {
                guard raw.count >= 4 else { return }
                length = Int(raw[2]) << 8 | Int(raw[3])
                offset = 4
            } else if length == 127 {
                guard raw.count >= 10 else { return }
                length = raw[2..<10].reduce(0) { $0 << 8 | Int($1) }
                offset = 10
            }
            guard raw.count >= offset + length else { return }
            let payload = Array(raw[offset..<offset + length])
            raw.removeSubrange(..<(offset + length))
            switch opcode {
            case 0x0, 0x1:
                fragments += payload
                if fin {
                    inbox.append(String(decoding: fragments, as: UTF8.self))
                    fragments = []
                }
            case 0x2:
                inbox.append("<binary frame>")
            case 0x8:
                try? write(NotificationWSClient.frame(opcode: 0x8, payload: Array(payload.prefix(2)), mask: [9, 8, 7, 6]))
            case 0x9:
                try? write(NotificationWSClient.frame(opcode: 0xA, payload: payload, mask: [5, 6, 7, 8]))
            default:
                break
            }
        }
    }
}

// MARK: - stdio

/// `tether simulate codex --stdio` as a child process: NDJSON on its stdin/stdout.
final class AppServerStdioPeer: AppServerPeer, @unchecked Sendable {
    let inbox = AppServerInbox()
    let pid: pid_t
    private var stdinFD: Int32
    private let stdoutFD: Int32
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// The `tether` binary SwiftPM built beside this test bundle.
    static var binary: String {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("tether")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            directory = directory.deletingLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/tether"
    }

    /// `tether simulate codex --stdio ARGUMENTS`, or without `--stdio` when `stdio` is false
    /// (then stdout carries the URL line, and the peer only watches the process).
    init(_ arguments: [String] = [], stdio: Bool = true) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw PeerFailure(description: "no tether binary at \(Self.binary): run `swift build --build-tests` first")
        }
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw PeerFailure(description: "pipe failed") }
        for fd in input + output { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([Self.binary, "simulate", "codex"] + (stdio ? ["--stdio"] : []) + arguments).map { strdup($0) } + [nil]
        let environment: [String] = ["PATH=/usr/bin:/bin", "HOME=" + NSTemporaryDirectory()]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, Self.binary, &actions, &attributes, argv, envp)
        _ = posixClose(input[0])
        _ = posixClose(output[1])
        guard rc == 0 else { throw PeerFailure(description: "cannot start tether: \(rc)") }
        self.pid = pid
        stdinFD = input[1]
        stdoutFD = output[0]
        Thread { [self] in readLoop() }.start()
    }

    deinit {
        closeInput()
        if status == nil { kill(pid, SIGKILL) }
        _ = wait(timeout: .seconds(2))
        _ = posixClose(stdoutFD)
    }

    func sendText(_ text: String) throws {
        let bytes = Array((text + "\n").utf8)
        let fd = lock.withLock { stdinFD }
        guard fd >= 0 else { throw PeerFailure(description: "stdin closed") }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw PeerFailure(description: "write to stdin failed") }
            sent += count
        }
    }

    func signal(_ signal: Int32) {
        if status == nil { kill(pid, signal) }
    }

    /// EOF on the child's stdin.
    func closeInput() {
        let fd = lock.withLock { () -> Int32 in
            defer { stdinFD = -1 }
            return stdinFD
        }
        if fd >= 0 { _ = posixClose(fd) }
    }

    /// The raw wait status once exited, nil while running.
    var status: Int32? {
        lock.withLock {
            if exitStatus == nil {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status }
            }
            return exitStatus
        }
    }

    /// Waits up to `timeout` for the exit; the raw wait status.
    func wait(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if let status { return status }
            usleep(2000)
        }
        return status
    }

    private func readLoop() {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(stdoutFD, &chunk, chunk.count)
            guard count > 0 else {
                inbox.end()
                return
            }
            buffer += chunk[0..<count]
            while let newline = buffer.firstIndex(of: 0x0A) {
                inbox.append(String(decoding: buffer[..<newline], as: UTF8.self))
                buffer.removeSubrange(...newline)
            }
        }
    }
}
