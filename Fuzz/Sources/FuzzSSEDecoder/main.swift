import FuzzSupport
import TetherNet

runFuzzer(fuzz)

/// The SSE decoder on hostile streams. Options: bit 0 reports comments; bit 1 uses a small line
/// limit (1 … 64 bytes, from bits 2–7) instead of the default, so the oversized-line paths run.
///
/// Oracles: no crash or ASan report; the same outputs and final state whether the stream comes
/// whole, in random chunks or byte by byte (the decoder promises that); no dispatched event or
/// ID carries a line terminator, and no ID a NUL.
func fuzz(_ input: FuzzInput) {
    let emitComments = input.options & 1 != 0
    let limit = input.options & 2 != 0 ? 1 + Int(input.options >> 2) : 16 << 20

    let whole = decode([input.payload[...]], emitComments: emitComments, limit: limit)
    let chunked = decode(input.chunks(), emitComments: emitComments, limit: limit)
    let bytewise = decode(input.bytewise(), emitComments: emitComments, limit: limit)
    fuzzRequire(whole == chunked, "chunked decoding differs from whole: \(whole) vs \(chunked)")
    fuzzRequire(whole == bytewise, "byte-by-byte decoding differs from whole: \(whole) vs \(bytewise)")

    for output in whole.outputs {
        switch output {
        case .event(let event):
            fuzzRequire(!event.type.isEmpty, "an event without a type")
            fuzzRequire(!event.data.utf8.contains(UInt8(ascii: "\r")), "event data holds a CR: \(event)")
            fuzzRequire(!event.id.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 }, "an event ID holds NUL, CR or LF: \(event)")
            fuzzRequire(!event.type.utf8.contains { $0 == 10 || $0 == 13 }, "an event type holds CR or LF: \(event)")
        case .comment(let text):
            fuzzRequire(emitComments, "a comment reported without emitComments")
            fuzzRequire(!text.utf8.contains { $0 == 10 || $0 == 13 }, "a comment holds CR or LF")
        case .lineTooLong(let reported):
            fuzzRequire(reported == limit, "lineTooLong reports \(reported), not the limit \(limit)")
        }
    }
}

struct Decoded: Equatable {
    var outputs: [SSEDecoder.Output] = []
    var lastEventID = ""
    var reconnectionTime: Int?
    /// What a second stream on the same decoder (a reconnection) yields: state must reset.
    var afterFinish: [SSEDecoder.Output] = []
}

func decode(_ chunks: [ArraySlice<UInt8>], emitComments: Bool, limit: Int) -> Decoded {
    var decoder = SSEDecoder(emitComments: emitComments, maxLineLength: limit)
    var result = Decoded()
    for chunk in chunks { result.outputs += decoder.feed(chunk) }
    decoder.finish()
    result.lastEventID = decoder.lastEventID
    result.reconnectionTime = decoder.reconnectionTime
    result.afterFinish = decoder.feed("data: after\n\n")
    return result
}
