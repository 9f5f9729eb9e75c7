import FuzzSupport
import TetherNet

runFuzzer(fuzz)

/// The JSON-lines framer (CodexMonitor's TCP stream) against a reference model. Options: the
/// line limit, 1 … 128 bytes (bits 0–6), or 1 MiB when bit 7 is set.
///
/// Oracles: no crash or ASan report; whole, chunked and byte-by-byte framing give the same
/// outputs; and they are exactly what the model below says: split at LF, strip one CR before
/// the LF, skip empty lines, report (once) and drop lines longer than the limit.
func fuzz(_ input: FuzzInput) {
    let limit = input.options & 0x80 != 0 ? 1 << 20 : 1 + Int(input.options & 0x7F)

    let expected = model(input.payload, limit: limit)
    let whole = frame([input.payload[...]], limit: limit)
    fuzzRequire(whole == expected, "framing differs from the model: \(whole) vs \(expected)")
    let chunked = frame(input.chunks(), limit: limit)
    fuzzRequire(chunked == expected, "chunked framing differs from the model: \(chunked) vs \(expected)")
    let bytewise = frame(input.bytewise(), limit: limit)
    fuzzRequire(bytewise == expected, "byte-by-byte framing differs from the model: \(bytewise) vs \(expected)")
}

struct Framed: Equatable {
    var outputs: [LineFramer.Output] = []
    var end: LineFramer.EndOfInput = .clean
}

func frame(_ chunks: [ArraySlice<UInt8>], limit: Int) -> Framed {
    var framer = LineFramer(maxLineLength: limit)
    var result = Framed()
    for chunk in chunks { result.outputs += framer.feed(chunk) }
    result.end = framer.finish()
    // The framer is reusable after finish(): a fresh line must frame on its own.
    let again = framer.feed(Array("x\n".utf8))
    fuzzRequire(again == [.line([UInt8(ascii: "x")])], "the framer is not clean after finish(): \(again)")
    return result
}

/// The documented behaviour, written the obvious (non-incremental) way.
func model(_ bytes: [UInt8], limit: Int) -> Framed {
    var result = Framed()
    var segments = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let last = segments.removeLast()  // after the last LF: a line still open at the end
    for segment in segments {
        let line = segment.last == UInt8(ascii: "\r") ? segment.dropLast() : segment
        if line.count > limit {
            result.outputs.append(.lineTooLong(limit: limit))
        } else if !line.isEmpty {
            result.outputs.append(.line(Array(line)))
        }
    }
    let held = last.last == UInt8(ascii: "\r") ? last.dropLast() : last
    if held.count > limit {
        result.outputs.append(.lineTooLong(limit: limit))
        result.end = .truncated(fragment: [])
    } else if !last.isEmpty {
        result.end = .truncated(fragment: Array(last))
    }
    return result
}
