import Foundation
#if canImport(Glibc)
import Glibc
private let systemClose = Glibc.close
private let systemSend = Glibc.send
private let streamSocket = Int32(SOCK_STREAM.rawValue)
private let noSignal = Int32(MSG_NOSIGNAL)
#elseif canImport(Darwin)
import Darwin
private let systemClose = Darwin.close
private let systemSend = Darwin.send
private let streamSocket = SOCK_STREAM
private let noSignal: Int32 = 0
#endif

/// A deliberately tiny HTTP/1.1 client over a raw TCP socket, so the simulators' wire is checked
/// byte for byte with no client library in between. Blocking reads run on a dedicated thread per
/// connection (never on the cooperative pool, which the in-process servers need); the test side
/// polls the bytes received so far.
final class RawConnection: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let fd: Int32
    private let lock = NSLock()
    private var buffer = Data()
    private var eof = false
    /// Read position; only the single test task that owns the connection moves it.
    private var cursor = 0

    init(port: UInt16) throws {
        fd = socket(AF_INET, streamSocket, 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            _ = systemClose(fd)
            throw Failure(description: "connect() to port \(port) failed")
        }
        let thread = Thread { [self] in readLoop() }
        thread.start()
    }

    deinit {
        _ = systemClose(fd)
    }

    private func readLoop() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            lock.lock()
            if count <= 0 {
                eof = true
                lock.unlock()
                return
            }
            buffer.append(contentsOf: chunk[0..<count])
            lock.unlock()
        }
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        try send(Data(bytes))
    }

    func send(_ data: Data) throws {
        var sent = 0
        try data.withUnsafeBytes { raw in
            while sent < raw.count {
                let count = systemSend(fd, raw.baseAddress! + sent, raw.count - sent, noSignal)
                guard count > 0 else { throw Failure(description: "send() failed") }
                sent += count
            }
        }
    }

    /// Ends our side; the reader thread sees EOF and stops.
    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    var isClosedByPeer: Bool {
        lock.withLock { eof && cursor >= buffer.count }
    }

    /// Bytes up to and including `delimiter`.
    func read(through delimiter: String, timeout: Duration = .seconds(5)) async throws -> Data {
        let needle = Data(delimiter.utf8)
        return try await poll(timeout: timeout, what: "\(delimiter.debugDescription)") { buffer, cursor, eof in
            if let range = buffer.range(of: needle, in: cursor..<buffer.count) {
                return range.upperBound
            }
            return nil
        }
    }

    func read(count: Int, timeout: Duration = .seconds(5)) async throws -> Data {
        try await poll(timeout: timeout, what: "\(count) bytes") { buffer, cursor, _ in
            buffer.count - cursor >= count ? cursor + count : nil
        }
    }

    /// Everything until the peer closes.
    func readToEnd(timeout: Duration = .seconds(5)) async throws -> Data {
        try await poll(timeout: timeout, what: "end of stream", allowEOF: true) { buffer, _, eof in
            eof ? buffer.count : nil
        }
    }

    private func poll(
        timeout: Duration, what: String, allowEOF: Bool = false,
        _ end: (Data, Int, Bool) -> Int?
    ) async throws -> Data {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let (result, closed): (Data?, Bool) = lock.withLock {
                guard let upper = end(buffer, cursor, eof) else { return (nil, eof) }
                let result = buffer.subdata(in: cursor..<upper)
                cursor = upper
                return (result, eof)
            }
            if let result { return result }
            if closed, !allowEOF { throw Failure(description: "connection closed while waiting for \(what)") }
            guard ContinuousClock.now < deadline else { throw Failure(description: "timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// A complete (non-streaming) response.
struct RawResponse: Sendable {
    var status: Int
    /// Lowercased names.
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
    }

    func object() throws -> [String: Any] {
        guard let object = try json() as? [String: Any] else { throw RawConnection.Failure(description: "not an object: \(text)") }
        return object
    }

    func array() throws -> [[String: Any]] {
        guard let array = try json() as? [[String: Any]] else { throw RawConnection.Failure(description: "not an array: \(text)") }
        return array
    }
}

enum RawHTTP {
    /// One request on a fresh connection (`Connection: close`).
    static func request(
        _ method: String, _ base: URL, _ target: String,
        headers: [String: String] = [:], body: String? = nil
    ) async throws -> RawResponse {
        let connection = try RawConnection(port: UInt16(base.port!))
        defer { connection.close() }
        try connection.send(requestHead(method, target, headers: headers, body: body, close: true) + (body ?? ""))
        let (status, responseHeaders) = try await readHead(connection)
        var data = Data()
        if let length = responseHeaders["content-length"].flatMap({ Int($0) }) {
            data = try await connection.read(count: length)
        } else if responseHeaders["transfer-encoding"]?.contains("chunked") == true {
            let decoder = ChunkedBody(connection: connection)
            while let chunk = try await decoder.nextChunk() { data.append(chunk) }
        }
        return RawResponse(status: status, headers: responseHeaders, body: data)
    }

    static func get(_ base: URL, _ target: String, headers: [String: String] = [:]) async throws -> RawResponse {
        try await request("GET", base, target, headers: headers)
    }

    static func post(_ base: URL, _ target: String, json: String = "", headers: [String: String] = [:]) async throws -> RawResponse {
        var headers = headers
        headers["Content-Type"] = "application/json"
        return try await request("POST", base, target, headers: headers, body: json)
    }

    static func requestHead(_ method: String, _ target: String, headers: [String: String], body: String?, close: Bool) -> String {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.utf8.count)\r\n" }
        if close { head += "Connection: close\r\n" }
        return head + "\r\n"
    }

    static func readHead(_ connection: RawConnection) async throws -> (Int, [String: String]) {
        let head = String(decoding: try await connection.read(through: "\r\n\r\n"), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw RawConnection.Failure(description: "bad status line in \(head)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    /// Opens a streaming GET and reads the response head.
    static func openStream(_ base: URL, _ target: String, headers: [String: String] = [:]) async throws -> SSEStreamReader {
        let connection = try RawConnection(port: UInt16(base.port!))
        try connection.send(requestHead("GET", target, headers: headers.merging(["Accept": "text/event-stream"]) { a, _ in a }, body: nil, close: false))
        let (status, responseHeaders) = try await readHead(connection)
        return SSEStreamReader(connection: connection, status: status, headers: responseHeaders)
    }
}

/// Decodes `Transfer-Encoding: chunked`, keeping each chunk as the server wrote it.
final class ChunkedBody: @unchecked Sendable {
    let connection: RawConnection
    init(connection: RawConnection) { self.connection = connection }

    /// The next chunk; nil after the terminating zero-size chunk. Throws if the connection ends first.
    func nextChunk(timeout: Duration = .seconds(5)) async throws -> Data? {
        let sizeLine = String(decoding: try await connection.read(through: "\r\n", timeout: timeout), as: UTF8.self)
        guard let size = Int(sizeLine.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16) else {
            throw RawConnection.Failure(description: "bad chunk size line \(sizeLine.debugDescription)")
        }
        if size == 0 {
            _ = try await connection.read(through: "\r\n", timeout: timeout)
            return nil
        }
        let data = try await connection.read(count: size, timeout: timeout)
        _ = try await connection.read(count: 2, timeout: timeout)
        return data
    }
}

/// An SSE response read frame by frame (a frame = the bytes up to and including a blank line).
final class SSEStreamReader: @unchecked Sendable {
    enum End: Equatable {
        /// Terminating chunk received.
        case clean
        /// Connection closed mid-body.
        case truncated
    }

    let connection: RawConnection
    let status: Int
    let headers: [String: String]
    private let chunks: ChunkedBody
    private var pending = Data()
    private(set) var end: End?
    /// Sizes of the chunks received, to check how the server flushed.
    private(set) var chunkSizes: [Int] = []

    init(connection: RawConnection, status: Int, headers: [String: String]) {
        self.connection = connection
        self.status = status
        self.headers = headers
        self.chunks = ChunkedBody(connection: connection)
    }

    /// The next raw frame (e.g. `data: {…}\n\n`), or nil when the stream ended (see `end`).
    func nextFrame(timeout: Duration = .seconds(5)) async throws -> String? {
        while true {
            if let range = pending.range(of: Data("\n\n".utf8)) {
                let frame = pending.subdata(in: pending.startIndex..<range.upperBound)
                pending.removeSubrange(pending.startIndex..<range.upperBound)
                return String(decoding: frame, as: UTF8.self)
            }
            if end != nil { return nil }
            do {
                if let chunk = try await chunks.nextChunk(timeout: timeout) {
                    chunkSizes.append(chunk.count)
                    pending.append(chunk)
                } else {
                    end = .clean
                }
            } catch let failure as RawConnection.Failure where failure.description.contains("closed") {
                end = .truncated
            }
        }
    }

    /// The next frame's `data:` JSON object (frames must be exactly `data: {…}\n\n`).
    func nextEvent(timeout: Duration = .seconds(5)) async throws -> [String: Any]? {
        guard let frame = try await nextFrame(timeout: timeout) else { return nil }
        guard frame.hasPrefix("data: "), frame.hasSuffix("\n\n"), frame.dropLast(2).firstIndex(of: "\n") == nil else {
            throw RawConnection.Failure(description: "not a single data line: \(frame.debugDescription)")
        }
        let json = try JSONSerialization.jsonObject(with: Data(frame.dropFirst(6).dropLast(2).utf8))
        guard let object = json as? [String: Any] else { throw RawConnection.Failure(description: "not an object: \(frame)") }
        return object
    }

    func close() {
        connection.close()
    }
}
