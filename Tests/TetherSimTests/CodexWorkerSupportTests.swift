// A raw HTTP/1.1 + SSE client for the Codex Worker simulator tests, on FlyingSocks' non-blocking
// sockets (never a blocking read on the cooperative pool, which the in-process server shares).
// Written against the wire, not against any adapter: it checks the bytes the simulator sends.
import FlyingSocks
import Foundation
import Logging
import Testing
@testable import TetherSim

struct CWTimeout: Error, CustomStringConvertible {
    let description: String
}

/// A complete (non-streaming) response.
struct CWResponse {
    let status: Int
    /// Lowercased header names.
    let headers: [String: String]
    let body: Data

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
    }

    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// One SSE block: comment lines or `id` / `event` / `data` fields, as raw lines.
struct CWFrame {
    let lines: [String]

    var isComment: Bool { lines.allSatisfy { $0.hasPrefix(":") } }
    var comment: String? { isComment ? lines.first : nil }
    func field(_ name: String) -> String? {
        lines.first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
    }

    var id: Int? { field("id").flatMap(Int.init) }
    var event: String? { field("event") }
    var envelope: [String: Any] {
        guard let data = field("data") else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
    }

    var payload: [String: Any] { envelope["payload"] as? [String: Any] ?? [:] }
}

/// Connects, writes a request, and parses the response head; the body is read on demand.
final class CWConnection {
    let socket: AsyncSocket
    private var buffer: [UInt8] = []
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    private var chunked = false
    private var decoded: [UInt8] = []
    /// The peer closed the socket.
    private(set) var closed = false
    /// A chunked body ended with its terminating zero-size chunk.
    private(set) var endedCleanly = false

    private init(socket: AsyncSocket) {
        self.socket = socket
    }

    deinit { try? socket.close() }

    static func open(
        _ base: URL, _ method: String, _ path: String,
        headers: [String: String] = [:], body: Data? = nil, keepAlive: Bool = false
    ) async throws -> CWConnection {
        let address = try sockaddr_in.inet(ip4: base.host ?? "127.0.0.1", port: UInt16(base.port ?? 80))
        let socket = try await AsyncSocket.connected(to: address)
        let connection = CWConnection(socket: socket)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(base.host ?? "127.0.0.1")\r\n"
        if !keepAlive { head += "Connection: close\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        var bytes = Data(head.utf8)
        if let body { bytes.append(body) }
        try await socket.write(bytes)
        try await connection.readHead()
        return connection
    }

    private func readMore(timeout: Duration) async throws {
        guard !closed else { return }
        let socket = self.socket
        let bytes: [UInt8]? = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask {
                do { return try await socket.read(atMost: 16384) } catch SocketError.disconnected { return nil }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw CWTimeout(description: "no data within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
        if let bytes { buffer.append(contentsOf: bytes) } else { closed = true }
    }

    private func readHead() async throws {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let range = find(separator, in: buffer) {
                let head = String(decoding: buffer[..<range], as: UTF8.self)
                buffer.removeFirst(range + separator.count)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                chunked = headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false
                return
            }
            if closed { throw CWTimeout(description: "connection closed before the response head") }
            try await readMore(timeout: .seconds(10))
        }
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int = 0) -> Int? {
        guard haystack.count >= needle.count + start else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index..<(index + needle.count)].elementsEqual(needle) {
            return index
        }
        return nil
    }

    /// Moves complete chunks (or raw bytes) from `buffer` into `decoded`.
    private func decode() {
        guard chunked else {
            decoded.append(contentsOf: buffer)
            buffer.removeAll()
            return
        }
        let crlf: [UInt8] = Array("\r\n".utf8)
        while !endedCleanly, let lineEnd = find(crlf, in: buffer) {
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return }
            let needed = lineEnd + 2 + size + 2
            guard buffer.count >= needed else { return }
            if size == 0 {
                endedCleanly = true
            } else {
                decoded.append(contentsOf: buffer[(lineEnd + 2)..<(lineEnd + 2 + size)])
            }
            buffer.removeFirst(needed)
        }
    }

    /// Reads the whole body (Content-Length, chunked to its end, or to EOF).
    func readBody(timeout: Duration = .seconds(10)) async throws -> Data {
        let length = headers["content-length"].flatMap(Int.init)
        while true {
            decode()
            if let length, decoded.count >= length { return Data(decoded.prefix(length)) }
            if chunked, endedCleanly { return Data(decoded) }
            if closed { return Data(decoded) }
            try await readMore(timeout: timeout)
        }
    }

    /// The next SSE block (`\n\n`-terminated), or nil once the connection is closed.
    func nextFrame(timeout: Duration = .seconds(10)) async throws -> CWFrame? {
        let separator: [UInt8] = Array("\n\n".utf8)
        while true {
            decode()
            if let end = find(separator, in: decoded) {
                let text = String(decoding: decoded[..<end], as: UTF8.self)
                decoded.removeFirst(end + separator.count)
                return CWFrame(lines: text.components(separatedBy: "\n"))
            }
            if closed || endedCleanly { return nil }
            try await readMore(timeout: timeout)
        }
    }

    /// The next event frame, skipping comments.
    func nextEvent(timeout: Duration = .seconds(10)) async throws -> CWFrame? {
        while let frame = try await nextFrame(timeout: timeout) {
            if !frame.isComment { return frame }
        }
        return nil
    }

    /// Events up to and including the first of type `type`.
    func events(through type: String, timeout: Duration = .seconds(10)) async throws -> [CWFrame] {
        var out: [CWFrame] = []
        while let frame = try await nextEvent(timeout: timeout) {
            out.append(frame)
            if frame.event == type { return out }
        }
        throw CWTimeout(description: "stream closed before \(type); got \(out.compactMap(\.event))")
    }
}

/// A started simulator plus request helpers.
struct CWHarness {
    let sim: CodexWorkerSimulator
    let url: URL
    let token: String?

    static let silent = Logger(label: "codex-worker-sim-tests") { _ in SwiftLogNoOpLogHandler() }

    static func start(_ options: CodexWorkerSimulator.Options = .init(pingInterval: .milliseconds(100))) async throws -> CWHarness {
        let sim = CodexWorkerSimulator(options: options, logger: silent)
        let url = try await sim.start()
        return CWHarness(sim: sim, url: url, token: options.token)
    }

    func stop() async { await sim.stop() }

    /// Runs `body` against a fresh simulator and always stops it.
    static func with(
        _ options: CodexWorkerSimulator.Options = .init(pingInterval: .milliseconds(100)),
        _ body: (CWHarness) async throws -> Void
    ) async throws {
        let harness = try await start(options)
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    private func authHeaders(_ extra: [String: String], auth: Bool) -> [String: String] {
        var headers = extra
        if auth, let token { headers["Authorization"] = "Bearer \(token)" }
        return headers
    }

    func request(
        _ method: String, _ path: String, json: [String: Any]? = nil, raw: Data? = nil,
        headers: [String: String] = [:], auth: Bool = true
    ) async throws -> CWResponse {
        var body = raw
        if let json { body = try JSONSerialization.data(withJSONObject: json) }
        if body == nil, method == "POST" { body = Data() }
        let connection = try await CWConnection.open(url, method, path, headers: authHeaders(headers, auth: auth), body: body)
        let data = try await connection.readBody()
        return CWResponse(status: connection.status, headers: connection.headers, body: data)
    }

    func stream(_ path: String, headers: [String: String] = [:]) async throws -> CWConnection {
        var all = headers
        all["Accept"] = "text/event-stream"
        return try await CWConnection.open(url, "GET", path, headers: authHeaders(all, auth: true), keepAlive: true)
    }

    func createThread() async throws -> String {
        let response = try await request("POST", "/v1/threads", json: [:])
        #expect(response.status == 201)
        return try #require((response.json["thread"] as? [String: Any])?["threadId"] as? String)
    }

    /// Starts a turn and returns its job id.
    func startTurn(_ threadId: String, _ text: String) async throws -> String {
        let response = try await request("POST", "/v1/threads/\(threadId)/turns", json: ["text": text])
        #expect(response.status == 202, "\(response.text)")
        return try #require(response.json["jobId"] as? String)
    }

    func snapshot(_ jobId: String) async throws -> [String: Any] {
        try await request("GET", "/v1/jobs/\(jobId)").json
    }

    /// Polls the snapshot until the job reaches `state`.
    @discardableResult
    func wait(_ jobId: String, for state: String, timeout: Duration = .seconds(10)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let snapshot = try await snapshot(jobId)
            if snapshot["state"] as? String == state { return snapshot }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw CWTimeout(description: "job \(jobId) never reached \(state)")
    }

    /// Every retained event of a job, through the JSON form.
    func events(_ jobId: String, cursor: Int? = nil) async throws -> [[String: Any]] {
        let query = cursor.map { "?cursor=\($0)" } ?? ""
        let response = try await request("GET", "/v1/jobs/\(jobId)/events\(query)")
        return response.json["data"] as? [[String: Any]] ?? []
    }

    func approvalId(_ jobId: String) async throws -> String {
        let required = try await events(jobId).first { $0["type"] as? String == "approval.required" }
        return try #require((required?["payload"] as? [String: Any])?["approvalId"] as? String)
    }

    func approve(_ jobId: String, _ body: [String: Any]) async throws -> CWResponse {
        try await request("POST", "/v1/jobs/\(jobId)/approve", json: body)
    }
}

extension Array where Element == [String: Any] {
    var cwTypes: [String] { compactMap { $0["type"] as? String } }
    func cwPayload(_ type: String) -> [String: Any]? {
        first { $0["type"] as? String == type }?["payload"] as? [String: Any]
    }
}

@Suite("Codex Worker test client")
struct CodexWorkerSupportTests {
    @Test("the client decodes a chunked SSE body frame by frame")
    func clientDecodesFrames() async throws {
        try await CWHarness.with { harness in
            let thread = try await harness.createThread()
            let job = try await harness.startTurn(thread, "hello")
            let stream = try await harness.stream("/v1/jobs/\(job)/events")
            #expect(stream.status == 200)
            let first = try #require(try await stream.nextFrame())
            #expect(first.comment == ": connected")
            let created = try #require(try await stream.nextEvent())
            #expect(created.event == "job.created")
            #expect(created.id == 0)
        }
    }
}
