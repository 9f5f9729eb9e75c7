#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibFuzzer
import TetherCore
import TetherNet

/// The running target's check (set once by `runFuzzer`, before libFuzzer calls in).
nonisolated(unsafe) private var currentCheck: ((FuzzInput) -> Void)?

/// libFuzzer's entry: one input to the running target's check. Exported under libFuzzer's name
/// too, for the runtime's own references to it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    currentCheck?(FuzzInput(data, count))
    return 0
}

/// Runs libFuzzer (its usual command line: corpus directories, `-max_total_time=`, …) with
/// `check` as the target, and exits with its status.
public func runFuzzer(_ check: @escaping (FuzzInput) -> Void) -> Never {
    currentCheck = check
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzerTestOneInput))
}

/// One fuzz input, as every target reads it: the first byte chooses options (which target-
/// specific settings apply, and where the payload is cut into chunks); the rest is the payload,
/// the bytes a peer would send. The seed corpora (`Fuzz/make-corpus.py`) are built this way.
public struct FuzzInput {
    /// Target-specific settings; also seeds the chunking.
    public let options: UInt8
    /// The wire bytes.
    public let payload: [UInt8]

    public init(_ start: UnsafePointer<UInt8>?, _ count: Int) {
        let bytes = UnsafeRawBufferPointer(start: start.map(UnsafeRawPointer.init), count: start == nil ? 0 : count)
        options = bytes.first ?? 0
        payload = count > 1 ? Array(bytes[1...]) : []
    }

    /// The payload cut into consecutive chunks whose sizes come from a small PRNG seeded by the
    /// options byte and the length, so one input always splits the same way. Sizes range from
    /// one byte to the whole payload, favouring small ones: the awkward splits (inside a CRLF,
    /// a UTF-8 sequence, a frame header) are what incremental decoders get wrong.
    public func chunks() -> [ArraySlice<UInt8>] {
        var state = UInt64(options) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(payload.count) &+ 1
        var result: [ArraySlice<UInt8>] = []
        var start = 0
        while start < payload.count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let bound = 1 << Int(state % 14)  // 1 … 8192
            let size = 1 + Int((state >> 8) % UInt64(bound))
            let end = min(start + size, payload.count)
            result.append(payload[start..<end])
            start = end
        }
        return result
    }

    /// The payload one byte at a time.
    public func bytewise() -> [ArraySlice<UInt8>] {
        payload.indices.map { payload[$0..<($0 + 1)] }
    }
}

/// Fails the run with `message` when an invariant does not hold. libFuzzer sees the abort,
/// saves the input as `crash-…` and stops.
public func fuzzRequire(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                        file: StaticString = #fileID, line: UInt = #line) {
    guard !condition() else { return }
    let text = "fuzz invariant failed at \(file):\(line): \(message())\n"
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
    abort()
}

/// Every event must survive the trip every consumer makes: encoded as a JSON line (what
/// `tether` prints) and read back with the same type and ids.
public func checkEncodable(_ events: [Event], codec: inout EventCodec) {
    for event in events {
        let line = codec.encode(event)
        fuzzRequire(line.last == UInt8(ascii: "\n") && line.dropLast().firstIndex(of: UInt8(ascii: "\n")) == nil,
                    "an event line is not one line: \(String(decoding: line, as: UTF8.self))")
        let decoded: Event
        do {
            decoded = try EventCodec.decode(String(decoding: line.dropLast(), as: UTF8.self))
        } catch {
            fuzzRequire(false, "an encoded event does not decode (\(error)): \(String(decoding: line, as: UTF8.self))")
            return
        }
        fuzzRequire(decoded.type == event.type && decoded.session == event.session && decoded.turn == event.turn
                        && decoded.part == event.part && decoded.cursor == event.cursor,
                    "an event changed on its JSONL round trip: \(String(decoding: line, as: UTF8.self))")
    }
}

/// Checks the promise every adapter makes: each part completes once (per session and part id).
public struct CompletionTracker {
    private var completed: Set<[String?]> = []

    public init() {}

    public mutating func check(_ events: [Event]) {
        for event in events where event.type == .partCompleted {
            let key = [event.session, event.part]
            fuzzRequire(completed.insert(key).inserted,
                        "part \(event.part ?? "?") of session \(event.session ?? "?") completed twice")
        }
    }
}

/// The payload as an SSE stream, fed to the decoder in chunks: the `data` of each event, in order.
public func sseEventData(_ input: FuzzInput) -> [String] {
    var decoder = SSEDecoder()
    var data: [String] = []
    for chunk in input.chunks() {
        for case .event(let event) in decoder.feed(chunk) { data.append(event.data) }
    }
    return data
}

/// Two decoders fed the same input, one keeping each event's `raw` and one not (which reads the
/// busiest messages straight from their bytes): both read it or neither, and their events are
/// the same but for `raw` and the receive time (each decoder stamps its own). `input`: what was
/// fed, for the failure message. Returns the events of the one that keeps `raw`.
public func requireSameButRaw(_ kept: [Event]?, _ read: [Event]?, input: @autoclosure () -> String,
                              file: StaticString = #fileID, line: UInt = #line) -> [Event]? {
    fuzzRequire((kept == nil) == (read == nil), "one decoder read what the other did not: \(input())", file: file, line: line)
    guard let kept, let read else { return nil }
    let stripped = kept.map { event in
        var event = event
        event.raw = nil
        return event
    }
    fuzzRequire(stripped.stamped(at: 0) == read.stamped(at: 0), "read without raw, an event differs: \(input())", file: file, line: line)
    return kept
}
