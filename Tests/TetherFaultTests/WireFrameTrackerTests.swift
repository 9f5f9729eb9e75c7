import Testing
@testable import TetherTestSupport

/// The fault proxy is only as exact as its idea of where frames end.
@Suite struct WireFrameTrackerTests {
    /// Feeds `bytes`; returns the offsets (after the byte) of frame ends and of injection points.
    static func marks(_ framing: WireFrameTracker.Framing, _ text: String) -> (frames: [Int], injectable: [Int]) {
        var tracker = WireFrameTracker(framing: framing)
        var frames: [Int] = []
        var injectable: [Int] = []
        for (index, byte) in Array(text.utf8).enumerated() {
            if tracker.feed(byte) == .frameEnd { frames.append(index + 1) }
            if tracker.atInjectionPoint { injectable.append(index + 1) }
        }
        return (frames, injectable)
    }

    @Test func chunkedSSEFramesEndAtTheBlankLineAndInjectAtChunkBoundaries() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        let first = "data: a\n\n"        // 9 bytes
        let second = "data: b\r\n\r\n"   // 11 bytes
        let body = "9\r\n\(first)\r\nb\r\n\(second)\r\n"
        let (frames, injectable) = Self.marks(.sse, head + body)
        let firstEnd = head.utf8.count + 3 + 9
        // "\r\n" closes the first chunk, "b\r\n" opens the second.
        #expect(frames == [firstEnd, firstEnd + 2 + 3 + 11])
        // Right after the head, and after each whole chunk — never inside one.
        #expect(injectable == [head.utf8.count, firstEnd + 2, firstEnd + 2 + 3 + 11 + 2])
    }

    @Test func rawSSEBodyInjectsRightAfterEachFrame() {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
        let (frames, injectable) = Self.marks(.sse, head + "data: x\n\n: c\n\n")
        #expect(frames == [head.utf8.count + 9, head.utf8.count + 14])
        #expect(injectable == [head.utf8.count] + frames)
    }

    @Test func linesHaveNoHead() {
        let (frames, injectable) = Self.marks(.lines, "{\"a\":1}\n\n{}\n")
        #expect(frames == [8, 9, 12])
        #expect(injectable == [8, 9, 12])
    }

    @Test func webSocketFramesOfEveryLengthEncoding() {
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
        var bytes = Array(head.utf8)
        let short = WireFrameTracker.Framing.webSocket.frame(Array("hi".utf8))
        let medium = WireFrameTracker.Framing.webSocket.frame([UInt8](repeating: 0x61, count: 300))
        let long = WireFrameTracker.Framing.webSocket.frame([UInt8](repeating: 0x62, count: 70_000))
        #expect(short.count == 4 && medium.count == 304 && long.count == 70_010)
        bytes += short + medium + long
        var tracker = WireFrameTracker(framing: .webSocket)
        var ends: [Int] = []
        for (index, byte) in bytes.enumerated() where tracker.feed(byte) == .frameEnd { ends.append(index + 1) }
        #expect(ends == [head.utf8.count + 4, head.utf8.count + 308, head.utf8.count + 70_318])
    }

    @Test func aChunkedFrameIsWrappedAsOneChunk() {
        var tracker = WireFrameTracker(framing: .sse)
        for byte in Array("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".utf8) { _ = tracker.feed(byte) }
        #expect(tracker.chunked)
        #expect(String(decoding: tracker.wrap(Array("data: {\n\n".utf8)), as: UTF8.self) == "9\r\ndata: {\n\n\r\n")
    }
}
