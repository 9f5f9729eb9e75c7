import Testing
@testable import TetherNet

/// The opening handshake (RFC 6455 §4.1) as a pure state machine, and URL mapping.
struct WebSocketHandshakeTests {
    /// The RFC's own example key (§1.3).
    let key = "dGhlIHNhbXBsZSBub25jZQ=="
    let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    func handshake(_ url: String = "ws://relay.example:9001/signal?room=1", subprotocols: [String] = []) throws -> WebSocketHandshake {
        WebSocketHandshake(endpoint: try WebSocketEndpoint(url), key: key, subprotocols: subprotocols,
                           headers: [("Origin", "http://tether.invalid")])
    }

    func response(_ lines: [String], then extra: [UInt8] = []) -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + extra
    }

    var goodResponse: [String] {
        ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"]
    }

    @Test func acceptValueMatchesTheRFC() {
        #expect(WebSocketHandshake.acceptValue(for: key) == accept)
    }

    @Test func keysAreSixteenRandomBytes() throws {
        let first = WebSocketHandshake.makeKey(), second = WebSocketHandshake.makeKey()
        #expect(first != second)
        #expect(first.count == 24 && first.hasSuffix("=="))
    }

    @Test func theRequest() throws {
        let text = String(decoding: try handshake(subprotocols: ["json"]).request, as: UTF8.self)
        #expect(text == """
            GET /signal?room=1 HTTP/1.1\r
            Host: relay.example:9001\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
            Sec-WebSocket-Version: 13\r
            Sec-WebSocket-Protocol: json\r
            Origin: http://tether.invalid\r
            \r

            """)
    }

    @Test func endpoints() throws {
        let plain = try WebSocketEndpoint("ws://127.0.0.1:9001")
        #expect(plain.connectURL == "http://127.0.0.1:9001/")
        #expect(plain.target == "/")
        #expect(plain.hostHeader == "127.0.0.1:9001")
        let secure = try WebSocketEndpoint("wss://signaling.chainlesschain.com/ws")
        #expect(secure.secure && secure.port == 443)
        #expect(secure.connectURL == "https://signaling.chainlesschain.com:443/")
        #expect(secure.hostHeader == "signaling.chainlesschain.com")  // default port left out
        let v6 = try WebSocketEndpoint("ws://[::1]:8080/x")
        #expect(v6.host == "::1" && v6.hostHeader == "[::1]:8080" && v6.connectURL == "http://[::1]:8080/")
        #expect(try WebSocketEndpoint("http://h/").secure == false)
        #expect(try WebSocketEndpoint("https://h/").secure == true)
        #expect(throws: NetError.self) { _ = try WebSocketEndpoint("ftp://h/") }
        #expect(throws: NetError.self) { _ = try WebSocketEndpoint("ws:///nohost") }
        #expect(throws: NetError.self) { _ = try WebSocketEndpoint("ws://h/#frag") }
    }

    @Test func aGoodResponseHandsBackTheBytesAfterIt() throws {
        var shake = try handshake()
        let result = try shake.feed(response(goodResponse, then: [0x81, 0x01, 0x41]))
        #expect(result?.status == 101)
        #expect(result?.leftover == [0x81, 0x01, 0x41])
        #expect(result?.subprotocol == nil)
    }

    @Test func theResponseMaySplitAnywhere() throws {
        let bytes = response(goodResponse, then: [0x81, 0x00])
        for cut in 0...bytes.count {
            var shake = try handshake()
            let first = try shake.feed(bytes[..<cut])
            if cut >= bytes.count - 2 {
                #expect(first != nil, "cut at \(cut)")
                continue
            }
            #expect(first == nil, "cut at \(cut)")
            #expect(try shake.feed(bytes[cut...])?.leftover == [0x81, 0x00], "cut at \(cut)")
        }
        // One byte at a time.
        var shake = try handshake()
        var result: WebSocketHandshake.Response?
        for byte in bytes where result == nil { result = try shake.feed([byte]) }
        #expect(result != nil)
    }

    @Test func headerNamesAndTokensAreCaseInsensitive() throws {
        var shake = try handshake()
        let lines = ["HTTP/1.1 101 Switching Protocols", "upgrade: WebSocket", "CONNECTION: keep-alive, upgrade",
                     "sec-websocket-accept: \(accept)"]
        #expect(try shake.feed(response(lines)) != nil)
    }

    func failure(_ lines: [String], subprotocols: [String] = []) throws -> NetError? {
        var shake = try handshake(subprotocols: subprotocols)
        do {
            _ = try shake.feed(response(lines))
            return nil
        } catch {
            return error
        }
    }

    @Test func refusals() throws {
        let notFound = try failure(["HTTP/1.1 404 Not Found", "Content-Length: 0"])
        #expect(notFound?.status == 404)
        #expect(try failure(["HTTP/1.1 200 OK"])?.status == 200)
        #expect(try failure(["SSH-2.0-OpenSSH_9.2"])?.kind == .other)
        var wrongAccept = goodResponse
        wrongAccept[3] = "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA="
        #expect(try failure(wrongAccept)?.detail.contains("Sec-WebSocket-Accept") == true)
        #expect(try failure(Array(goodResponse.prefix(3)))?.detail.contains("Sec-WebSocket-Accept") == true)
        #expect(try failure([goodResponse[0], goodResponse[2], goodResponse[3]])?.detail.contains("Upgrade") == true)
        #expect(try failure([goodResponse[0], goodResponse[1], goodResponse[3]])?.detail.contains("Connection") == true)
        #expect(try failure(goodResponse + ["Sec-WebSocket-Extensions: permessage-deflate"])?.detail.contains("extensions") == true)
        #expect(try failure(goodResponse + ["Sec-WebSocket-Protocol: chat"])?.detail.contains("subprotocol") == true)
    }

    @Test func subprotocolNegotiation() throws {
        var shake = try handshake(subprotocols: ["json", "chat"])
        #expect(try shake.feed(response(goodResponse + ["Sec-WebSocket-Protocol: chat"]))?.subprotocol == "chat")
        #expect(try failure(goodResponse + ["Sec-WebSocket-Protocol: xml"], subprotocols: ["json"]) != nil)
    }

    @Test func anEndlessHeaderBlockIsRefused() throws {
        var shake = WebSocketHandshake(endpoint: try WebSocketEndpoint("ws://h/"), key: key, maxHeaderBytes: 100)
        #expect(try shake.feed(Array("HTTP/1.1 101 Switching Protocols\r\n".utf8)) == nil)
        #expect(throws: NetError.self) { _ = try shake.feed([UInt8](repeating: UInt8(ascii: "x"), count: 100)) }
    }
}
