import Testing
@testable import TetherNet

/// The decoder as a pure state machine: RFC 6455 §5 framing, fragmentation, control frames,
/// limits and every protocol error, with bytes split at every possible point.
struct WebSocketFrameDecoderTests {
    typealias Output = WebSocketFrameDecoder.Output
    typealias ProtocolError = WebSocketFrameDecoder.ProtocolError

    /// A server frame (unmasked), or a client frame with `mask`.
    func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, mask: WebSocketMask? = nil) -> [UInt8] {
        WebSocketFrameEncoder.frame(opcode, payload: payload, fin: fin, mask: mask)
    }

    func text(_ string: String, fin: Bool = true) -> [UInt8] { frame(.text, Array(string.utf8), fin: fin) }
    func continuation(_ string: String, fin: Bool = true) -> [UInt8] { frame(.continuation, Array(string.utf8), fin: fin) }

    func decodeWhole(_ bytes: [UInt8], role: WebSocketFrameDecoder.Role = .client, max: Int = 1 << 20) throws -> [Output] {
        var decoder = WebSocketFrameDecoder(role: role, maxMessageSize: max)
        return try decoder.feed(bytes)
    }

    func expectError(_ bytes: [UInt8], _ code: WebSocketCloseCode, role: WebSocketFrameDecoder.Role = .client, max: Int = 1 << 20,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        var decoder = WebSocketFrameDecoder(role: role, maxMessageSize: max)
        do {
            _ = try decoder.feed(bytes)
            Issue.record("expected a protocol error \(code)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.closeCode == code, "\(error)", sourceLocation: sourceLocation)
        }
    }

    // A stream with every feature: 7/16/64-bit lengths, a fragmented text message with a ping
    // and a pong between its fragments, a fragmented binary, an empty message, then a close.
    var stream: [UInt8] {
        text("héllo")
            + frame(.binary, [UInt8](repeating: 7, count: 300))
            + frame(.binary, [UInt8](repeating: 9, count: 70_000))
            + text("frag", fin: false) + frame(.ping, Array("p".utf8)) + continuation("men", fin: false)
            + frame(.pong, []) + continuation("ted ✓")
            + frame(.binary, [1, 2], fin: false) + frame(.continuation, [3])
            + text("")
            + frame(.close, [0x03, 0xE8] + Array("bye".utf8))
    }

    var expectedOutputs: [Output] {
        [
            .message(.text("héllo")),
            .message(.binary([UInt8](repeating: 7, count: 300))),
            .message(.binary([UInt8](repeating: 9, count: 70_000))),
            .ping(Array("p".utf8)),
            .pong([]),
            .message(.text("fragmented ✓")),
            .message(.binary([1, 2, 3])),
            .message(.text("")),
            .close(WebSocketClose(code: .normalClosure, reason: "bye")),
        ]
    }

    @Test func decodesAWholeStream() throws {
        #expect(try decodeWhole(stream) == expectedOutputs)
    }

    /// The same stream cut in two at every byte boundary of its small frames gives the same outputs.
    @Test func everyTwoWaySplit() throws {
        let small = text("héllo") + text("frag", fin: false) + frame(.ping, [1, 2]) + continuation("ment")
            + frame(.binary, [UInt8](repeating: 3, count: 130)) + frame(.close, [0x03, 0xE9])
        let expected: [Output] = [.message(.text("héllo")), .ping([1, 2]), .message(.text("fragment")),
                                  .message(.binary([UInt8](repeating: 3, count: 130))), .close(WebSocketClose(code: .goingAway))]
        for cut in 0...small.count {
            var decoder = WebSocketFrameDecoder()
            let outputs = try decoder.feed(Array(small[..<cut])) + decoder.feed(Array(small[cut...]))
            #expect(outputs == expected, "cut at \(cut)")
        }
    }

    @Test func byteAtATime() throws {
        var decoder = WebSocketFrameDecoder()
        var outputs: [Output] = []
        for byte in stream { outputs += try decoder.feed([byte]) }
        #expect(outputs == expectedOutputs)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test(arguments: [0, 1, 125, 126, 127, 65_535, 65_536, 100_000])
    func lengthBoundaries(count: Int) throws {
        let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0) }
        #expect(try decodeWhole(frame(.binary, payload)) == [.message(.binary(payload))])
        // The same through a server-side decoder, masked.
        #expect(try decodeWhole(frame(.binary, payload, mask: WebSocketMask(1, 2, 3, 4)), role: .server) == [.message(.binary(payload))])
    }

    @Test func sixtyFourBitLengthWithTheTopBitSetIsAnError() {
        expectError([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1], .protocolError)
    }

    @Test func maskingIsEnforcedByRole() throws {
        let masked = frame(.text, Array("hi".utf8), mask: WebSocketMask(9, 8, 7, 6))
        expectError(masked, .protocolError, role: .client)  // a server must not mask
        expectError(text("hi"), .protocolError, role: .server)  // a client must mask
        #expect(try decodeWhole(masked, role: .server) == [.message(.text("hi"))])
        // The error is known from the first two bytes, before the rest arrives.
        expectError(Array(masked.prefix(2)), .protocolError, role: .client)
    }

    @Test func controlFramesBetweenFragmentsArriveAtOnce() throws {
        var decoder = WebSocketFrameDecoder()
        #expect(try decoder.feed(text("a", fin: false)) == [])
        #expect(try decoder.feed(frame(.ping, [1])) == [.ping([1])])
        #expect(try decoder.feed(continuation("b", fin: false)) == [])
        #expect(try decoder.feed(frame(.pong, [2])) == [.pong([2])])
        #expect(try decoder.feed(continuation("c")) == [.message(.text("abc"))])
    }

    @Test func aCloseBetweenFragmentsEndsTheStream() throws {
        var decoder = WebSocketFrameDecoder()
        let outputs = try decoder.feed(text("a", fin: false) + frame(.close, [0x03, 0xE8]) + continuation("b"))
        #expect(outputs == [.close(WebSocketClose(code: .normalClosure))])
        #expect(decoder.isClosed)
        #expect(try decoder.feed(text("ignored")) == [])
    }

    @Test func aMultibyteCharacterMaySpanFragments() throws {
        let bytes = Array("✓".utf8)  // e2 9c 93
        let stream = frame(.text, [bytes[0]], fin: false) + frame(.continuation, [bytes[1], bytes[2]])
        #expect(try decodeWhole(stream) == [.message(.text("✓"))])
    }

    @Test func oversizeMessagesFailFromTheHeader() throws {
        // One frame over the limit fails on its header, before the payload is buffered.
        var decoder = WebSocketFrameDecoder(maxMessageSize: 100)
        let big = frame(.binary, [UInt8](repeating: 0, count: 101))
        #expect(throws: ProtocolError(.messageTooBig, "a message is larger than the 100-byte limit")) {
            _ = try decoder.feed(Array(big.prefix(4)))
        }
        // Fragments adding up to more than the limit fail too.
        expectError(text(String(repeating: "x", count: 60), fin: false) + continuation(String(repeating: "y", count: 41)),
                    .messageTooBig, max: 100)
        // Exactly the limit is fine, whole or fragmented.
        #expect(try decodeWhole(frame(.binary, [UInt8](repeating: 1, count: 100)), max: 100).count == 1)
        #expect(try decodeWhole(text(String(repeating: "x", count: 60), fin: false) + continuation(String(repeating: "y", count: 40)),
                                max: 100).count == 1)
        // Control frames do not count against it.
        #expect(try decodeWhole(frame(.ping, [UInt8](repeating: 0, count: 125)), max: 10) == [.ping([UInt8](repeating: 0, count: 125))])
    }

    @Test(arguments: [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] as [UInt8])
    func reservedOpcodesAreErrors(opcode: UInt8) {
        expectError([0x80 | opcode, 0], .protocolError)
    }

    @Test(arguments: [0x40, 0x20, 0x10] as [UInt8])
    func reservedBitsAreErrors(bit: UInt8) {
        expectError([0x81 | bit, 1, 0x41], .protocolError)
    }

    @Test func malformedControlFrames() {
        // Longer than 125 bytes (the 7-bit length says 126: a 16-bit length follows).
        expectError([0x89, 126, 0, 126] + [UInt8](repeating: 0, count: 126), .protocolError)
        // Fragmented.
        expectError([0x09, 0], .protocolError)
        expectError([0x08, 0], .protocolError)
    }

    @Test func fragmentationErrors() {
        // A continuation with nothing to continue.
        expectError(continuation("x"), .protocolError)
        // A new data message while one is fragmented.
        expectError(text("a", fin: false) + text("b"), .protocolError)
        expectError(text("a", fin: false) + frame(.binary, [1]), .protocolError)
    }

    @Test func invalidUTF8() {
        expectError(frame(.text, [0xC3, 0x28]), .invalidPayload)
        expectError(frame(.text, [0xC3], fin: false) + frame(.continuation, [0x28]), .invalidPayload)
        expectError(frame(.close, [0x03, 0xE8, 0xFF]), .invalidPayload)
        // Binary is not text.
        #expect((try? decodeWhole(frame(.binary, [0xC3, 0x28]))) == [.message(.binary([0xC3, 0x28]))])
    }

    @Test(arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4000, 4999] as [UInt16])
    func validCloseCodes(code: UInt16) throws {
        #expect(try decodeWhole(frame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + Array("why".utf8)))
            == [.close(WebSocketClose(code: WebSocketCloseCode(code), reason: "why"))])
    }

    @Test(arguments: [0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535] as [UInt16])
    func invalidCloseCodes(code: UInt16) {
        expectError(frame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)]), .protocolError)
    }

    @Test func closeWithoutACodeAndWithOneByte() throws {
        #expect(try decodeWhole(frame(.close, [])) == [.close(WebSocketClose(code: .noStatusReceived))])
        expectError(frame(.close, [0x03]), .protocolError)
    }

    /// What completed before a bad frame is delivered however the bytes were split into reads:
    /// in one read the message comes back and `failure` is set; the next feed throws it.
    @Test func framesBeforeABadOneAreDeliveredInTheSameRead() {
        let bytes = text("hi") + frame(.ping, [1]) + [0xC1, 1, 0x41]  // then RSV1 set: a protocol error
        var whole = WebSocketFrameDecoder()
        #expect((try? whole.feed(bytes)) == [.message(.text("hi")), .ping([1])])
        #expect(whole.failure?.closeCode == .protocolError)
        #expect(throws: ProtocolError.self) { _ = try whole.feed(text("later")) }
        for split in 1..<bytes.count {
            var decoder = WebSocketFrameDecoder()
            var outputs: [Output] = []
            var failed = false
            for part in [Array(bytes[..<split]), Array(bytes[split...])] where !failed {
                do { outputs += try decoder.feed(part) } catch { failed = true }
                if decoder.failure != nil { failed = true }
            }
            #expect(outputs == [.message(.text("hi")), .ping([1])], "split at \(split)")
            #expect(failed, "split at \(split)")
        }
    }

    @Test func failuresAreSticky() {
        var decoder = WebSocketFrameDecoder()
        #expect(throws: ProtocolError.self) { _ = try decoder.feed([0x83, 0]) }
        #expect(throws: ProtocolError.self) { _ = try decoder.feed(text("fine")) }
    }

    @Test func aPartialFrameIsBufferedUntilComplete() throws {
        var decoder = WebSocketFrameDecoder()
        let bytes = frame(.binary, [UInt8](repeating: 5, count: 1000))
        #expect(try decoder.feed(Array(bytes.prefix(500))) == [])
        #expect(decoder.bufferedByteCount == 500 - 4)
        #expect(try decoder.feed(Array(bytes.dropFirst(500))) == [.message(.binary([UInt8](repeating: 5, count: 1000)))])
        #expect(decoder.bufferedByteCount == 0)
    }
}
