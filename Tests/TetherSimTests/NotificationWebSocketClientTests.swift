import Foundation
import Testing
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

/// A minimal RFC 6455 client for the notification simulator's tests, over a plain POSIX socket so
/// that no WebSocket library sits between the tests and the relay's bytes (URLSession's WebSocket
/// is unreliable on Linux). Blocking reads run on a dedicated thread (never on the cooperative
/// pool, which the in-process server needs); tests poll what has arrived.
///
/// Sends masked text frames; reads unmasked text/binary frames (reassembling continuations),
/// answers pings, records the close code.
final class NotificationWSClient: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The RFC 6455 §1.3 sample key and its accept value: a fixed key lets the test check the
    /// server's `Sec-WebSocket-Accept` without a SHA-1 of its own.
    static let sampleKey = "dGhlIHNhbXBsZSBub25jZQ=="
    static let sampleAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    private struct Inbox {
        var raw: [UInt8] = []
        var handshake: String?
        /// Every text message received, in order.
        var all: [String] = []
        /// Messages not yet taken by `next(…)`.
        var pending: [String] = []
        var fragments: [UInt8] = []
        var closeCode: UInt16?
        var ended = false
    }

    private let fd: Int32
    private let inbox = Locked(Inbox())
    private let writeLock = NSLock()

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        _ = posixClose(fd)
    }

    /// Connects and completes the opening handshake (101 with the right accept value).
    static func connect(_ url: URL, path: String = "/") async throws -> NotificationWSClient {
        let client = try open(url)
        try client.write(Array((
            "GET \(path) HTTP/1.1\r\nHost: \(url.host ?? ""):\(url.port ?? 0)\r\nUpgrade: websocket\r\n"
                + "Connection: Upgrade\r\nSec-WebSocket-Key: \(sampleKey)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).utf8))
        let lines = try await client.responseHead().components(separatedBy: "\r\n")
        guard lines.first?.hasPrefix("HTTP/1.1 101") == true else {
            throw Failure(description: "handshake refused: \(lines.first ?? "")")
        }
        let accept = lines.first { $0.lowercased().hasPrefix("sec-websocket-accept:") }
            .map { $0.dropFirst("sec-websocket-accept:".count).trimmingCharacters(in: .whitespaces) }
        guard accept == sampleAccept else { throw Failure(description: "bad Sec-WebSocket-Accept: \(accept ?? "none")") }
        return client
    }

    /// The status line a plain (non-upgrade) GET gets.
    static func plainGETStatus(_ url: URL) async throws -> String {
        let client = try open(url)
        try client.write(Array("GET / HTTP/1.1\r\nHost: \(url.host ?? "")\r\nConnection: close\r\n\r\n".utf8))
        return try await client.responseHead().components(separatedBy: "\r\n").first ?? ""
    }

    private static func open(_ url: URL) throws -> NotificationWSClient {
        guard let host = url.host, let port = url.port else { throw Failure(description: "bad url \(url)") }
        let fd = socket(AF_INET, posixStream, 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                posixConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            _ = posixClose(fd)
            throw Failure(description: "connect() to \(host):\(port) failed")
        }
        let client = NotificationWSClient(fd: fd)
        Thread { [client] in client.readLoop() }.start()
        return client
    }

    private func responseHead() async throws -> String {
        try await poll("the HTTP response head", timeout: .seconds(5)) { $0.handshake }
    }

    // MARK: Sending

    /// One masked text frame (RFC 6455 §5.2, §5.3).
    func send(_ text: String) throws {
        try write(Self.frame(opcode: 0x1, payload: Array(text.utf8), mask: (0..<4).map { _ in UInt8.random(in: 0...255) }))
    }

    /// Sends a JSON object built with `JSONSerialization`.
    func sendJSON(_ object: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: object)
        try send(String(decoding: data, as: UTF8.self))
    }

    /// Sends a close frame and shuts the socket for writing.
    func close(code: UInt16 = 1000) {
        try? write(Self.frame(opcode: 0x8, payload: [UInt8(code >> 8), UInt8(code & 0xFF)], mask: [1, 2, 3, 4]))
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    static func frame(opcode: UInt8, payload: [UInt8], mask: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | opcode]
        switch payload.count {
        case ..<126:
            bytes.append(0x80 | UInt8(payload.count))
        case ..<65536:
            bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes.append(0x80 | 127)
            bytes += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (UInt64($0) * 8)) & 0xFF) }
        }
        bytes += mask
        bytes += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return bytes
    }

    private func write(_ bytes: [UInt8]) throws {
        writeLock.lock()
        defer { writeLock.unlock() }
        var sent = 0
        try bytes.withUnsafeBytes { raw in
            while sent < raw.count {
                let count = posixSend(fd, raw.baseAddress! + sent, raw.count - sent, posixNoSignal)
                guard count > 0 else { throw Failure(description: "send() failed") }
                sent += count
            }
        }
    }

    // MARK: Receiving

    private func readLoop() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else {
                inbox.withLock { $0.ended = true }
                return
            }
            let replies = inbox.withLock { inbox -> [[UInt8]] in
                inbox.raw += chunk[0..<count]
                return Self.drain(&inbox)
            }
            for reply in replies { try? write(reply) }
        }
    }

    /// Parses everything complete in `raw`; returns the control replies to send (pongs, close echo).
    private static func drain(_ inbox: inout Inbox) -> [[UInt8]] {
        var replies: [[UInt8]] = []
        if inbox.handshake == nil {
            guard let end = inbox.raw.firstRange(of: [13, 10, 13, 10]) else { return [] }
            inbox.handshake = String(decoding: inbox.raw[..<end.lowerBound], as: UTF8.self)
            inbox.raw.removeSubrange(..<end.upperBound)
        }
        while inbox.raw.count >= 2 {
            let raw = inbox.raw
            let fin = raw[0] & 0x80 != 0
            let opcode = raw[0] & 0x0F
            let masked = raw[1] & 0x80 != 0
            var length = Int(raw[1] & 0x7F)
            var offset = 2
            if length == 126 {
                guard raw.count >= 4 else { return replies }
                length = Int(raw[2]) << 8 | Int(raw[3])
                offset = 4
            } else if length == 127 {
                guard raw.count >= 10 else { return replies }
                length = raw[2..<10].reduce(0) { $0 << 8 | Int($1) }
                offset = 10
            }
            let maskBytes = masked ? 4 : 0
            guard raw.count >= offset + maskBytes + length else { return replies }
            var payload = Array(raw[(offset + maskBytes)..<(offset + maskBytes + length)])
            if masked {
                // A server must never mask (RFC 6455 §5.1); unmask anyway and flag it as a message.
                let mask = Array(raw[offset..<offset + 4])
                payload = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
                inbox.all.append("<masked server frame>")
            }
            inbox.raw.removeSubrange(..<(offset + maskBytes + length))
            switch opcode {
            case 0x0, 0x1, 0x2:
                inbox.fragments += payload
                if fin {
                    let text = String(decoding: inbox.fragments, as: UTF8.self)
                    inbox.fragments = []
                    inbox.all.append(text)
                    inbox.pending.append(text)
                }
            case 0x8:
                inbox.closeCode = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : 1005
                replies.append(frame(opcode: 0x8, payload: Array(payload.prefix(2)), mask: [9, 8, 7, 6]))
            case 0x9:
                replies.append(frame(opcode: 0xA, payload: payload, mask: [5, 6, 7, 8]))
            default:
                break
            }
        }
        return replies
    }

    private func poll<T>(
        _ what: String, timeout: Duration, _ take: @Sendable (inout Inbox) -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let value = inbox.withLock({ take(&$0) }) { return value }
            guard ContinuousClock.now < deadline else {
                let seen = inbox.withLock { $0.all.joined(separator: "\n  ") }
                throw Failure(description: "timed out waiting for \(what); received so far:\n  \(seen)")
            }
            try await Task.sleep(for: .milliseconds(3))
        }
    }

    /// The next message not yet taken, as text.
    func nextText(timeout: Duration = .seconds(5)) async throws -> String {
        try await poll("a message", timeout: timeout) { inbox in
            inbox.pending.isEmpty ? nil : inbox.pending.removeFirst()
        }
    }

    /// Takes the first pending message whose `type` is `type` (others stay pending), as text.
    func nextText(type: String, timeout: Duration = .seconds(5)) async throws -> String {
        try await poll("a \(type) frame", timeout: timeout) { inbox in
            guard let index = inbox.pending.firstIndex(where: { Self.type(of: $0) == type }) else { return nil }
            return inbox.pending.remove(at: index)
        }
    }

    /// Takes the first pending message whose `type` is `type`, decoded.
    func next(type: String, timeout: Duration = .seconds(5)) async throws -> [String: Any] {
        try Self.object(await nextText(type: type, timeout: timeout))
    }

    /// Takes the first pending relay `message` whose inner envelope has `type` (e.g. a command
    /// response), returning the whole frame.
    func nextMessage(envelope type: String, timeout: Duration = .seconds(5)) async throws -> [String: Any] {
        let text = try await poll("a message carrying \(type)", timeout: timeout) { inbox -> String? in
            guard let index = inbox.pending.firstIndex(where: { Self.envelopeType(of: $0) == type }) else { return nil }
            return inbox.pending.remove(at: index)
        }
        return try Self.object(text)
    }

    /// Pending messages of `type` after waiting `window` (none are taken).
    func count(type: String, after window: Duration) async throws -> Int {
        try await Task.sleep(for: window)
        return inbox.withLock { $0.pending.count { Self.type(of: $0) == type } }
    }

    /// Every text message received so far (taken or not).
    var received: [String] {
        inbox.withLock { $0.all }
    }

    /// Waits for the server's close frame or the end of the stream; the close code if one came.
    func waitForClose(timeout: Duration = .seconds(5)) async throws -> UInt16? {
        try await poll("the connection to close", timeout: timeout) { inbox -> UInt16?? in
            if let code = inbox.closeCode { return .some(code) }
            return inbox.ended ? .some(nil) : nil
        }
    }

    // MARK: Decoding helpers

    static func object(_ text: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw Failure(description: "not a JSON object: \(text)")
        }
        return object
    }

    static func type(of text: String) -> String? {
        (try? object(text))?["type"] as? String
    }

    /// The `type` of a relay `message`'s payload (an object, or a JSON string holding one).
    static func envelopeType(of text: String) -> String? {
        guard let frame = try? object(text), frame["type"] as? String == "message" else { return nil }
        return (try? payloadObject(frame["payload"]))?["type"] as? String
    }

    /// A payload that is either an object or a JSON string of one.
    static func payloadObject(_ value: Any?) throws -> [String: Any] {
        if let object = value as? [String: Any] { return object }
        if let text = value as? String { return try object(text) }
        throw Failure(description: "payload is neither an object nor a JSON string: \(String(describing: value))")
    }
}

@Suite("Notification simulator: the tests' WebSocket client")
struct NotificationWebSocketClientTests {
    @Test("client frames are masked as in RFC 6455 §5.7 (\"Hello\" with mask 37 fa 21 3d)")
    func maskedFrame() {
        let frame = NotificationWSClient.frame(opcode: 0x1, payload: Array("Hello".utf8), mask: [0x37, 0xFA, 0x21, 0x3D])
        #expect(frame == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test("16-bit and 64-bit payload lengths")
    func extendedLengths() {
        let medium = NotificationWSClient.frame(opcode: 0x1, payload: [UInt8](repeating: 0, count: 300), mask: [0, 0, 0, 0])
        #expect(Array(medium.prefix(4)) == [0x81, 0xFE, 0x01, 0x2C])
        let large = NotificationWSClient.frame(opcode: 0x2, payload: [UInt8](repeating: 0, count: 70_000), mask: [0, 0, 0, 0])
        #expect(Array(large.prefix(10)) == [0x82, 0xFF, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70])
    }

    @Test("the relay completes the handshake on any path with the RFC's accept value; plain HTTP gets 426")
    func handshake() async throws {
        try await withNotificationSimulator { _, url in
            let client = try await NotificationWSClient.connect(url, path: "/any/path")
            try client.send(#"{"type":"ping"}"#)
            let pong = try await client.next(type: "pong")
            #expect(pong["timestamp"] is Int)
            client.close()
            #expect(try await NotificationWSClient.plainGETStatus(url) == "HTTP/1.1 426 Upgrade Required")
        }
    }
}

// MARK: - Test support

/// Runs `body` against a started simulator and stops it afterwards, also when `body` throws.
func withNotificationSimulator(
    _ options: NotificationSimulator.Options = NotificationSimulator.Options(),
    _ body: (NotificationSimulator, URL) async throws -> Void
) async throws {
    let sim = NotificationSimulator(options: options)
    let url = try await sim.start()
    do {
        try await body(sim, url)
    } catch {
        await sim.stop()
        throw error
    }
    await sim.stop()
}

extension NotificationWSClient {
    /// Connects and registers as `peerID`; returns once `registered` arrived.
    static func registered(
        _ url: URL, as peerID: String, deviceType: String = "mobile"
    ) async throws -> NotificationWSClient {
        let client = try await connect(url)
        try client.sendJSON([
            "type": "register", "peerId": peerID, "deviceType": deviceType,
            "deviceInfo": ["name": "linux-gw", "platform": "linux"],
        ])
        _ = try await client.next(type: "registered")
        return client
    }

    /// Sends `{type:"message", to, payload:{type:"chainlesschain:command:request", payload:{id, method, params, auth}}}`
    /// (§2.1, §4.1); the inner payload as a JSON string when `innerAsString`.
    func sendCommand(
        to peerID: String = "desktop-1", id: String, method: String, params: [String: Any] = [:],
        innerAsString: Bool = false
    ) throws {
        let request: [String: Any] = ["id": id, "method": method, "params": params, "auth": ["did": "did:key:z6MkGateway"]]
        let inner: Any = innerAsString
            ? String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
            : request
        try sendJSON([
            "type": "message", "to": peerID,
            "payload": ["type": "chainlesschain:command:request", "payload": inner],
        ])
    }

    /// The next command response: whether its `payload` was a JSON string, and the decoded JSON-RPC body.
    func nextResponse(timeout: Duration = .seconds(5)) async throws -> (payloadWasString: Bool, body: [String: Any]) {
        let frame = try await nextMessage(envelope: "chainlesschain:command:response", timeout: timeout)
        let envelope = try Self.payloadObject(frame["payload"])
        return (envelope["payload"] is String, try Self.payloadObject(envelope["payload"]))
    }

    /// Sends a command and returns the `result` object of its response (failing on an `error`).
    func call(
        _ method: String, _ params: [String: Any] = [:], id: String = UUID().uuidString, to peerID: String = "desktop-1"
    ) async throws -> [String: Any] {
        try sendCommand(to: peerID, id: id, method: method, params: params)
        let response = try await nextResponse()
        guard response.body["id"] as? String == id else {
            throw Failure(description: "response for another id: \(response.body)")
        }
        guard let result = response.body["result"] as? [String: Any] else {
            throw Failure(description: "no result object: \(response.body)")
        }
        return result
    }
}
