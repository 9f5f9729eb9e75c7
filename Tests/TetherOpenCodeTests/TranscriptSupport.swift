import Foundation
import TetherCore
@testable import TetherOpenCode
import TetherStreaming

/// Recorded OpenCode SSE payloads (one `data:` JSON a line) under Transcripts/.
enum Transcript {
    static func frames(_ name: String) throws -> [JSONValue] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "jsonl", subdirectory: "Transcripts") else {
            throw TranscriptMissing(name: name)
        }
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    /// Feeds every frame through a fresh mapper, as the live client does (minus I/O).
    static func map(_ frames: [JSONValue], into mapper: inout OpenCodeEventMapper) throws -> [Event] {
        try frames.flatMap { try mapper.map(OpenCodeWireEvent.decode($0)) }
    }

    struct TranscriptMissing: Error { let name: String }
}

extension Array where Element == Event {
    func of(_ type: EventType) -> [Event] { filter { $0.type == type } }

    /// The final text of each completed text part, in order.
    var completedTexts: [String] {
        of(.partCompleted).filter { $0.data["kind"] == "text" }.compactMap { $0.data["text"]?.string }
    }

    /// Text assembled from deltas, per part.
    var assembledDeltas: [String: String] {
        var texts: [String: String] = [:]
        for event in of(.partDelta) { texts[event.part!, default: ""] += event.data["delta"]?.string ?? "" }
        return texts
    }
}
