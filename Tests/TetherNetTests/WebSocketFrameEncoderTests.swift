import Testing
@testable import TetherNet

/// RFC 6455 §5.2 framing, byte for byte.
struct WebSocketFrameEncoderTests {
    let mask = WebSocketMask(0x37, 0xFA, 0x21, 0x3D)

    /// The RFC's own examples (§5.7).
    @Test func rfcExamples() {
        #expect(WebSocketFrameEncoder.frame(.text, payload: Array("Hello".utf8), mask: nil)
            == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(WebSocketFrameEncoder.frame(.text, payload: Array("Hello".utf8), mask: mask)
            == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        #expect(WebSocketFrameEncoder.frame(.text, payload: Array("Hel".utf8), fin: false, mask: nil) == [0x01, 0x03, 0x48, 0x65, 0x6C])
        #expect(WebSocketFrameEncoder.frame(.continuation, payload: Array("lo".utf8), mask: nil) == [0x80, 0x02, 0x6C, 0x6F])
        #expect(WebSocketFrameEncoder.frame(.ping, payload: Array("Hello".utf8), mask: nil) == [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(WebSocketFrameEncoder.frame(.pong, payload: Array("Hello".utf8), mask: mask)
            == [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test func lengthEncodings() {
        // 7-bit up to 125.
        #expect(WebSocketFrameEncoder.frame(.binary, payload: [UInt8](repeating: 0, count: 125), mask: nil).prefix(2) == [0x82, 125])
        // 16-bit from 126 to 65535.
        #expect(WebSocketFrameEncoder.frame(.binary, payload: [UInt8](repeating: 0, count: 126), mask: nil).prefix(4) == [0x82, 126, 0x00, 126])
        #expect(WebSocketFrameEncoder.frame(.binary, payload: [UInt8](repeating: 0, count: 256), mask: nil).prefix(4) == [0x82, 126, 0x01, 0x00])
        #expect(WebSocketFrameEncoder.frame(.binary, payload: [UInt8](repeating: 0, count: 65535), mask: nil).prefix(4) == [0x82, 126, 0xFF, 0xFF])
        // 64-bit from 65536: the RFC's 64 KiB example.
        let big = WebSocketFrameEncoder.frame(.binary, payload: [UInt8](repeating: 0, count: 65536), mask: nil)
        #expect(big.prefix(10) == [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00])
        #expect(big.count == 10 + 65536)
        // The mask bit and key follow the length.
        let masked = WebSocketFrameEncoder.frame(.binary, payload: [UInt8](repeating: 0, count: 300), mask: mask)
        #expect(masked.prefix(8) == [0x82, 0x80 | 126, 0x01, 0x2C, 0x37, 0xFA, 0x21, 0x3D])
        #expect(Array(masked[8..<12]) == [0x37, 0xFA, 0x21, 0x3D])  // zeros XOR key = key
    }

    @Test func messagesSplitIntoContinuations() throws {
        var masks = 0
        let bytes = WebSocketFrameEncoder.message(.text("abcdefghij"), maxFrameSize: 4) {
            masks += 1
            return nil
        }
        #expect(masks == 3)
        #expect(bytes == [0x01, 4] + Array("abcd".utf8) + [0x00, 4] + Array("efgh".utf8) + [0x80, 2] + Array("ij".utf8))
        // A message that fits is one frame.
        #expect(WebSocketFrameEncoder.message(.binary([1, 2]), maxFrameSize: 4) { nil } == [0x82, 2, 1, 2])
        // Empty messages are one empty frame.
        #expect(WebSocketFrameEncoder.message(.text(""), maxFrameSize: 4) { nil } == [0x81, 0])
    }

    @Test func maskedMessagesDecodeBackOnTheServerSide() throws {
        let text = String(repeating: "héllo wörld ", count: 50)
        var generator = SystemRandomNumberGenerator()
        let bytes = WebSocketFrameEncoder.message(.text(text), maxFrameSize: 100) { .random(using: &generator) }
        var server = WebSocketFrameDecoder(role: .server)
        #expect(try server.feed(bytes) == [.message(.text(text))])
    }

    @Test func closePayloads() {
        #expect(WebSocketFrameEncoder.closePayload(WebSocketClose(code: .normalClosure)) == [0x03, 0xE8])
        #expect(WebSocketFrameEncoder.closePayload(WebSocketClose(code: WebSocketCloseCode(4001), reason: "bad token"))
            == [0x0F, 0xA1] + Array("bad token".utf8))
        // Codes that must not be sent give an empty payload.
        #expect(WebSocketFrameEncoder.closePayload(WebSocketClose(code: .noStatusReceived)) == [])
        #expect(WebSocketFrameEncoder.closePayload(WebSocketClose(code: .abnormalClosure)) == [])
        // A long reason is cut to fit 125 bytes, never inside a character.
        let long = WebSocketFrameEncoder.closePayload(WebSocketClose(code: .goingAway, reason: String(repeating: "é", count: 100)))
        #expect(long.count == 124)
        #expect(String(validating: long[2...], as: UTF8.self) == String(repeating: "é", count: 61))
        #expect(WebSocketFrameEncoder.closePayload(WebSocketClose(code: .goingAway, reason: String(repeating: "x", count: 200))).count == 125)
    }
}
