import FuzzSupport
import TetherNet

runFuzzer(fuzz)

/// The WebSocket frame decoder (RFC 6455) on hostile byte streams. Options: bit 0 decodes as a
/// server (frames must be masked) instead of a client; bits 1–3 pick the message size limit.
///
/// Oracles: no crash or ASan report; whole, chunked and byte-by-byte input end the same way
/// (the same outputs, then the same protocol error or none); every message decoded re-encodes, fragmented
/// and masked as the peer would send it, into frames that decode to the same message.
func fuzz(_ input: FuzzInput) {
    let role: WebSocketFrameDecoder.Role = input.options & 1 != 0 ? .server : .client
    let limits = [16 << 20, 0, 1, 16, 125, 126, 1000, 65_536]
    let limit = limits[Int(input.options >> 1) & 7]

    let whole = decode([input.payload[...]], role: role, limit: limit)
    let chunked = decode(input.chunks(), role: role, limit: limit)
    let bytewise = decode(input.bytewise(), role: role, limit: limit)
    fuzzRequire(whole.error == chunked.error && whole.error == bytewise.error,
                "the outcome depends on the split: \(String(describing: whole.error)), \(String(describing: chunked.error)), \(String(describing: bytewise.error))")
    // Also when it fails: what completed before the bad frame is delivered whatever the split.
    fuzzRequire(whole.outputs == chunked.outputs, "chunked decoding differs: \(whole.outputs) vs \(chunked.outputs)")
    fuzzRequire(whole.outputs == bytewise.outputs, "byte-by-byte decoding differs: \(whole.outputs) vs \(bytewise.outputs)")
    for output in whole.outputs {
        switch output {
        case .message(let message):
            fuzzRequire(message.byteCount <= limit, "a \(message.byteCount)-byte message passed the \(limit)-byte limit")
            let frames = WebSocketFrameEncoder.message(message, maxFrameSize: 7) {
                role == .server ? WebSocketMask(1, 2, 3, 4) : nil
            }
            let again = decode([frames[...]], role: role, limit: limit)
            fuzzRequire(again.error == nil && again.outputs == [output], "a decoded message does not re-encode to itself: \(message)")
        case .ping(let payload), .pong(let payload):
            fuzzRequire(payload.count <= 125, "a control frame longer than 125 bytes")
        case .close(let close):
            fuzzRequire(output == whole.outputs.last, "output after a close frame")
            fuzzRequire(close.code.isValidOnWire || close.code == .noStatusReceived, "an invalid close code \(close.code)")
        }
    }
}

struct Decoded {
    var outputs: [WebSocketFrameDecoder.Output] = []
    var error: WebSocketFrameDecoder.ProtocolError?
}

func decode(_ chunks: [ArraySlice<UInt8>], role: WebSocketFrameDecoder.Role, limit: Int) -> Decoded {
    var decoder = WebSocketFrameDecoder(role: role, maxMessageSize: limit)
    var result = Decoded()
    for chunk in chunks {
        do throws(WebSocketFrameDecoder.ProtocolError) {
            result.outputs += try decoder.feed(Array(chunk))
            // Frames before a bad one in the same chunk come back, and the failure is set.
            if let failure = decoder.failure { throw failure }
        } catch {
            result.error = error
            // A failed decoder stays failed.
            var repeated: WebSocketFrameDecoder.ProtocolError?
            do { _ = try decoder.feed([0x81, 0x00]) } catch let again { repeated = again }
            fuzzRequire(repeated == error, "a failed decoder did not stay failed")
            return result
        }
    }
    fuzzRequire(decoder.bufferedByteCount <= chunks.reduce(0) { $0 + $1.count }, "more bytes buffered than were fed")
    return result
}
