import Foundation
import Testing
import TetherSim

let fixtureSession = OpenCodeSimulator.fixtureSessionID
let cleanPrompt = #"{"parts":[{"type":"text","text":"Clean the build dir and say done"}],"model":{"providerID":"anthropic","modelID":"claude-sonnet-4"},"agent":"build"}"#
let plainPrompt = #"{"parts":[{"type":"text","text":"Say hello"}]}"#

func basicAuth(_ user: String = "opencode", _ password: String = "secret") -> [String: String] {
    ["Authorization": "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
}

/// Runs `body` against a started simulator and always stops it.
func withSimulator(
    _ options: OpenCodeSimulator.Options = OpenCodeSimulator.Options(),
    _ body: (OpenCodeSimulator, URL) async throws -> Void
) async throws {
    let simulator = OpenCodeSimulator(options: options)
    let base = try await simulator.start()
    do {
        try await body(simulator, base)
    } catch {
        await simulator.stop()
        throw error
    }
    await simulator.stop()
}

extension SSEStreamReader {
    /// The bus event of the next frame: the envelope's `payload` on `/global/event`, the frame itself on `/event`.
    func nextPayload(timeout: Duration = .seconds(5)) async throws -> [String: Any]? {
        guard let event = try await nextEvent(timeout: timeout) else { return nil }
        return (event["payload"] as? [String: Any]) ?? event
    }

    /// Payloads up to and including the first of type `type`.
    func payloads(through type: String, timeout: Duration = .seconds(5)) async throws -> [[String: Any]] {
        var collected: [[String: Any]] = []
        while let payload = try await nextPayload(timeout: timeout) {
            collected.append(payload)
            if payload["type"] as? String == type { return collected }
        }
        throw RawConnection.Failure(description: "stream ended before \(type); got \(collected.map { $0["type"] ?? "?" })")
    }
}

extension [String: Any] {
    var type: String? { self["type"] as? String }
    var properties: [String: Any] { self["properties"] as? [String: Any] ?? [:] }
    var part: [String: Any] { properties["part"] as? [String: Any] ?? [:] }
    var info: [String: Any] { properties["info"] as? [String: Any] ?? [:] }

    subscript(path path: String...) -> Any? {
        var current: Any? = self
        for key in path {
            current = (current as? [String: Any])?[key]
        }
        return current
    }
}
