import Foundation
import TetherCodexProtocol
import TetherCore
@testable import TetherCodexAppServer
import TetherStreaming

/// The transcripts captured from the real codex 0.163 (`../shared/protocols/codex-app-server/`):
/// `  TIME CLIENT DIR JSON` lines (`<` from the server, `>` to it) and `# …` comments, of which
/// `# === NAME` starts a section.
struct Transcript {
    struct Line {
        var client: String
        var fromServer: Bool
        var message: JSONValue
        var section: String?
    }

    let lines: [Line]

    init(_ name: String) throws {
        guard let url = Bundle.module.url(forResource: name, withExtension: "txt", subdirectory: "Transcripts") else {
            throw Missing(name: name)
        }
        var lines: [Line] = []
        var section: String?
        for raw in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
            let text = raw.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("# === ") { section = String(text.dropFirst(6)); continue }
            let fields = text.split(separator: " ", maxSplits: 3)
            guard fields.count == 4, Double(fields[0]) != nil, fields[2] == "<" || fields[2] == ">",
                  let message = try? JSONParser.parse(String(fields[3])) else { continue }
            lines.append(Line(client: String(fields[1]), fromServer: fields[2] == "<", message: message, section: section))
        }
        self.lines = lines
    }

    /// What `client` received unasked (notifications and server requests), in order.
    func unasked(by client: String, section: String? = nil) -> [JSONValue] {
        lines.filter { $0.client == client && $0.fromServer && $0.message["method"] != nil
            && (section == nil || $0.section == section) }.map(\.message)
    }

    /// The result of `client`'s call of `method` (the n-th one, from 0).
    func result(of method: String, by client: String, index: Int = 0) -> JSONValue? {
        let calls = lines.filter { $0.client == client && !$0.fromServer && $0.message["method"]?.string == method }
        guard index < calls.count, let id = calls[index].message["id"] else { return nil }
        return lines.first { $0.client == client && $0.fromServer && $0.message["id"] == id && $0.message["method"] == nil }?
            .message["result"]
    }

    var sections: [String] {
        lines.compactMap(\.section).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
    }

    struct Missing: Error { let name: String }
}

extension Array where Element == Event {
    func of(_ type: EventType) -> [Event] { filter { $0.type == type } }
}

extension CodexAppServerStreamMachine {
    /// A machine for `events --follow` over every session (or one).
    static func following(session: String? = nil, hasPrompt: Bool = false, newProcessPerConnection: Bool = false) -> Self {
        CodexAppServerStreamMachine(
            request: EventsRequest(session: session, follow: true, untilTurnCompletes: hasPrompt),
            configuration: .init(target: session, endpoint: "ws://test", hasPrompt: hasPrompt, newProcessPerConnection: newProcessPerConnection))
    }

    /// Feeds messages as the connection's reader hands them on; returns the events emitted.
    mutating func feed(_ messages: [JSONValue]) -> [Event] {
        messages.flatMap { Self.events(receive($0, at: 0)) }
    }

    /// One message as the connection's reader hands it on: deltas and items started read
    /// straight from their bytes, the rest parsed whole.
    mutating func receive(_ message: JSONValue, at time: Double) -> [Action] {
        receive(Self.wire(message), at: time)
    }

    static func wire(_ message: JSONValue) -> CodexAppServerMessage {
        let text = Array(message.serialized.utf8)
        if let hot = CodexHotMessage.read(text, strings: nil) { return .hot(hot, text: text) }
        return .whole(message)
    }

    static func events(_ actions: [Action]) -> [Event] {
        actions.flatMap { action -> [Event] in
            if case .emit(let events) = action { return events }
            return []
        }
    }
}
