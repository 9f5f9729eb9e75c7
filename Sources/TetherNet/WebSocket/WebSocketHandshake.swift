import Foundation
import TetherDigest

/// A `ws://` or `wss://` URL, split into what the connection needs: libcurl connects to the
/// `http://` / `https://` equivalent (so TLS and proxies are libcurl's), and the opening
/// handshake names the host and the request target.
public struct WebSocketEndpoint: Sendable, Hashable {
    public let url: String
    public let secure: Bool
    public let host: String
    public let port: Int
    /// Path and query, as the request line carries them (`/` at least).
    public let target: String

    /// Parses `url`; `http://` and `https://` are taken as `ws://` and `wss://`.
    public init(_ url: String) throws(NetError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            throw NetError(.other, url: url, detail: "not a URL (expected ws://HOST[:PORT]/PATH or wss://…)")
        }
        switch scheme {
        case "ws", "http": secure = false
        case "wss", "https": secure = true
        default: throw NetError(.other, url: url, detail: "unsupported scheme \"\(scheme)\" (expected ws:// or wss://)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw NetError(.other, url: url, detail: "the URL has no host")
        }
        guard components.fragment == nil else {
            throw NetError(.other, url: url, detail: "a WebSocket URL cannot have a #fragment")
        }
        self.url = url
        // URLComponents keeps IPv6 brackets in `host` on some platforms and strips them on others.
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (secure ? 443 : 80)
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        target = components.percentEncodedQuery.map { path + "?" + $0 } ?? path
    }

    var bracketedHost: String { host.contains(":") ? "[\(host)]" : host }

    /// The `Host` header: the port only when it is not the scheme's default (RFC 6455 §4.1).
    public var hostHeader: String {
        port == (secure ? 443 : 80) ? bracketedHost : "\(bracketedHost):\(port)"
    }

    /// What libcurl connects to.
    public var connectURL: String { "\(secure ? "https" : "http")://\(bracketedHost):\(port)/" }
}

/// The client's opening handshake (RFC 6455 §4.1), as a pure state machine: the request to
/// send, then the response bytes fed until the header block ends; bytes after it are the
/// first frames and are handed back.
public struct WebSocketHandshake: Sendable {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    public let endpoint: WebSocketEndpoint
    /// The `Sec-WebSocket-Key`: 16 random bytes, base64.
    public let key: String
    public let subprotocols: [String]
    public let headers: [(name: String, value: String)]
    /// The response's header block may not grow past this.
    public let maxHeaderBytes: Int

    private var received: [UInt8] = []

    public struct Response: Sendable {
        public let status: Int
        /// Names lower-cased; repeated fields joined with ", ".
        public let headers: [String: String]
        /// The subprotocol the server chose, if any.
        public let subprotocol: String?
        /// Bytes after the header block: the start of the frame stream.
        public let leftover: [UInt8]
    }

    public init(endpoint: WebSocketEndpoint, key: String = WebSocketHandshake.makeKey(), subprotocols: [String] = [],
                headers: [(name: String, value: String)] = [], maxHeaderBytes: Int = 16 << 10) {
        self.endpoint = endpoint
        self.key = key
        self.subprotocols = subprotocols
        self.headers = headers
        self.maxHeaderBytes = maxHeaderBytes
    }

    public static func makeKey(using generator: inout some RandomNumberGenerator) -> String {
        Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }).base64EncodedString()
    }

    public static func makeKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return makeKey(using: &generator)
    }

    /// base64(SHA-1(key + the RFC's GUID)): what the server must answer in `Sec-WebSocket-Accept`.
    public static func acceptValue(for key: String) -> String {
        Data(Digest.sha1(Array((key + guid).utf8))).base64EncodedString()
    }

    /// The request, `\r\n`-terminated, ready for the wire.
    public var request: [UInt8] {
        var lines = [
            "GET \(endpoint.target) HTTP/1.1",
            "Host: \(endpoint.hostHeader)",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: \(key)",
            "Sec-WebSocket-Version: 13",
        ]
        if !subprotocols.isEmpty { lines.append("Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))") }
        for header in headers { lines.append("\(header.name): \(header.value)") }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// Feeds response bytes; returns the validated response once the header block is complete,
    /// `nil` while it is not. Throws `NetError` (`.status` for an answer other than 101,
    /// `.tooLarge` for an endless header block, `.other` for a failed check).
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(NetError) -> Response? {
        let before = received.count
        received.append(contentsOf: bytes)
        // Look for CRLFCRLF from a little before the new bytes (it may straddle two reads).
        let from = Swift.max(0, before - 3)
        guard let end = Self.headerEnd(in: received, from: from) else {
            if received.count > maxHeaderBytes {
                throw NetError(.tooLarge, url: endpoint.url, detail: "the handshake response's headers exceed \(maxHeaderBytes) bytes")
            }
            return nil
        }
        guard end <= maxHeaderBytes else {
            throw NetError(.tooLarge, url: endpoint.url, detail: "the handshake response's headers exceed \(maxHeaderBytes) bytes")
        }
        let block = String(decoding: received[..<end], as: UTF8.self)
        let leftover = Array(received[(end + 4)...])
        return try validate(block, leftover: leftover)
    }

    private static func headerEnd(in bytes: [UInt8], from: Int) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = from
        while index + 3 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 { return index }
            index += 1
        }
        return nil
    }

    private func validate(_ block: String, leftover: [UInt8]) throws(NetError) -> Response {
        let url = endpoint.url
        var lines = block.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let fields = statusLine.split(separator: " ", maxSplits: 2)
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/1."), let status = Int(fields[1]) else {
            throw NetError(.other, url: url, detail: "the server's answer is not HTTP: \(statusLine.prefix(80))")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        guard status == 101 else {
            throw NetError(.status(status), url: url, detail: "HTTP \(status) instead of 101 Switching Protocols: the URL is not a WebSocket endpoint, or the server refused the upgrade",
                           body: leftover, headers: headers)
        }
        guard headers["upgrade"]?.lowercased() == "websocket" else {
            throw NetError(.other, url: url, detail: "the server's 101 answer lacks Upgrade: websocket", headers: headers)
        }
        let connectionTokens = (headers["connection"] ?? "").lowercased().split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard connectionTokens.contains("upgrade") else {
            throw NetError(.other, url: url, detail: "the server's 101 answer lacks Connection: Upgrade", headers: headers)
        }
        guard headers["sec-websocket-accept"] == Self.acceptValue(for: key) else {
            throw NetError(.other, url: url, detail: "the server's Sec-WebSocket-Accept does not match the key we sent", headers: headers)
        }
        if let extensions = headers["sec-websocket-extensions"], !extensions.isEmpty {
            throw NetError(.other, url: url, detail: "the server chose extensions we did not offer: \(extensions)", headers: headers)
        }
        let chosen = headers["sec-websocket-protocol"].flatMap { $0.isEmpty ? nil : $0 }
        if let chosen, !subprotocols.contains(chosen) {
            throw NetError(.other, url: url, detail: "the server chose the subprotocol \"\(chosen)\", which we did not offer", headers: headers)
        }
        return Response(status: status, headers: headers, subprotocol: chosen, leftover: leftover)
    }
}
