import Foundation
@testable import TetherSim

/// Runs `body` against a started ws simulator (port), stopping it afterwards.
func withCodexAppServer(
    _ options: CodexAppServerSimulator.Options = CodexAppServerSimulator.Options(pacing: .milliseconds(1)),
    _ body: (CodexAppServerSimulator, Int) async throws -> Void
) async throws {
    let sim = CodexAppServerSimulator(options: options)
    let url = try await sim.start()
    do {
        try await body(sim, url.port!)
    } catch {
        await sim.stop()
        throw error
    }
    await sim.stop()
}

/// Decoding helpers for `[String: Any]` messages.
func member(_ value: Any?, _ path: String...) -> Any? {
    var current = value
    for key in path { current = (current as? [String: Any])?[key] }
    return current
}

func string(_ value: Any?, _ path: String...) -> String? {
    var current = value
    for key in path { current = (current as? [String: Any])?[key] }
    return current as? String
}

func methodOf(_ message: [String: Any]) -> String {
    if let method = message["method"] as? String { return message["id"] == nil ? method : "request " + method }
    return message["error"] != nil ? "error" : "response"
}

/// A message's method, or `response`, with consecutive deltas folded into one `delta×`.
func shape(_ messages: [[String: Any]]) -> [String] {
    var shape: [String] = []
    for message in messages {
        let name = methodOf(message)
        if name == "item/agentMessage/delta" {
            if shape.last != "delta×" { shape.append("delta×") }
            continue
        }
        if name == "item/started" || name == "item/completed" {
            shape.append(name + " " + (string(message, "params", "item", "type") ?? "?"))
            continue
        }
        if name == "thread/status/changed" {
            let status = member(message, "params", "status") as? [String: Any]
            let flags = (status?["activeFlags"] as? [String])?.joined(separator: ",")
            shape.append(name + " " + (status?["type"] as? String ?? "?") + (flags.map { "[\($0)]" } ?? ""))
            continue
        }
        shape.append(name)
    }
    return shape
}

extension AppServerPeer {
    /// Everything up to and including this turn's `turn/completed`.
    func untilTurnCompleted(timeout: Duration = .seconds(10)) async throws -> [[String: Any]] {
        try await inbox.collect(until: "turn/completed", timeout: timeout) { ($0["method"] as? String) == "turn/completed" }
    }
}
