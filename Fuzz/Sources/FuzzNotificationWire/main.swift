import FuzzSupport
import TetherCore
import TetherNet
import TetherNotification
import TetherStreaming

runFuzzer(fuzz)

/// The signaling relay's WebSocket as the notification backend reads it: the server's bytes,
/// cut into chunks by the options byte and decoded by `WebSocketFrameDecoder`; each text
/// message goes through `NotificationWireDecoder` (relay frames, both envelope families, pushed
/// notifications, and all 11 methods' result readers). Options bit 0 picks what the payload is:
/// clear, the WebSocket byte stream itself; set, the relay's text frames one per line, which
/// are framed here (fragmented at the chunk sizes) — so that mutations reach the JSON inside
/// without breaking the frames' lengths.
///
/// Oracles: no crash or ASan report; a pushed notification's event encodes as one JSON line that
/// reads back the same; every method's reading of a response serializes to JSON that parses.
func fuzz(_ input: FuzzInput) {
    var frames = WebSocketFrameDecoder(role: .client)
    var codec = EventCodec(includeRaw: true)
    for chunk in input.options & 1 == 0 ? input.chunks() : [framed(input)[...]] {
        let outputs: [WebSocketFrameDecoder.Output]
        do { outputs = try frames.feed(Array(chunk)) } catch { return }
        for case .message(.text(let text)) in outputs {
            if let event = NotificationWireDecoder.pushedNotification(fromFrame: text) {
                fuzzRequire(event.type == .notificationReceived && event.data["id"]?.string?.isEmpty == false,
                            "a pushed notification without an id: \(event.data)")
                checkEncodable([event], codec: &codec)
            }
            for reading in NotificationWireDecoder.responseReadings(fromFrame: text) ?? [] {
                guard case .success(let value) = reading.result else { continue }
                fuzzRequire((try? JSONParser.parse(value.serialized)) != nil, "\(reading.method) reads a response as invalid JSON")
            }
        }
    }
}

/// Each line of the payload as a text message from the server (unmasked), in frames of the
/// chunk sizes; bytes that are not UTF-8 are replaced, as a sender's string would be.
func framed(_ input: FuzzInput) -> [UInt8] {
    var sizes = input.chunks().map(\.count).makeIterator()
    var bytes: [UInt8] = []
    for line in input.payload.split(separator: UInt8(ascii: "\n")) {
        let text = String(decoding: line, as: UTF8.self)
        bytes += WebSocketFrameEncoder.message(.text(text), maxFrameSize: max(1, sizes.next() ?? .max)) { nil }
    }
    return bytes
}
