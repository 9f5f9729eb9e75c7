import Foundation
import TetherCore

/// What one scenario did to one backend, judged against the same turn run without faults.
///
/// The events that must survive are `part.completed` and `turn.completed`: a consumer that reads
/// only those must see each exactly once, with the exact text. Deltas may legitimately be
/// replaced by a resync's snapshot, so they are not counted.
struct FaultOutcome: Sendable {
    let scenario: String
    let backend: String
    /// What the fault proxy did: restarts, cuts, stalls, injected frames.
    var faults = ""
    var expected = 0
    var delivered = 0
    var duplicated = 0
    var lost = 0
    /// Every completed event's content (kind, role, text, status) equals the reference's.
    var textExact = false
    var exitStatus: Int32 = -1
    var expectedExit: Int32 = 0
    var peakRSSMegabytes = 0.0
    /// Server→client bytes on REST requests through the proxy (what the resyncs read); nil
    /// where the link does not go through it (the tunnel row).
    var restBytes: Int?
    /// Everything that went wrong, for the test failure message.
    var problems: [String] = []

    var passed: Bool { problems.isEmpty }
}

enum FaultLedger {
    /// The content of a completed event that a consumer relies on.
    static func view(_ event: Event) -> String {
        let data = event.data
        if event.type == .notificationReceived {
            return [event.type.rawValue, data["title"]?.string, data["body"]?.string, data["priority"]?.string]
                .map { $0 ?? "-" }.joined(separator: " | ")
        }
        return [event.type.rawValue, data["kind"]?.string, data["role"]?.string, data["text"]?.string, data["status"]?.string]
            .map { $0 ?? "-" }.joined(separator: " | ")
    }

    /// The events that must arrive exactly once: completed parts and turns, received notifications.
    static func completed(_ events: [Event]) -> [Event] {
        events.filter { $0.type == .partCompleted || $0.type == .turnCompleted || $0.type == .notificationReceived }
    }

    /// The identity a duplicate would repeat: the part, the turn, the notification.
    static func identity(_ event: Event) -> String {
        switch event.type {
        case .partCompleted: return "part \(event.part ?? "?")"
        case .notificationReceived: return "notification \(event.data["id"]?.string ?? "?")"
        default: return "turn \(event.turn ?? "?")"
        }
    }

    /// Fills in the counts of `outcome` from the run's events against the reference's.
    static func judge(_ outcome: inout FaultOutcome, events: [Event], reference: [Event]) {
        let expected = completed(reference)
        let delivered = completed(events)
        outcome.expected = expected.count
        outcome.delivered = delivered.count
        var seen = Set<String>()
        var unique: [Event] = []
        for event in delivered where seen.insert(identity(event)).inserted { unique.append(event) }
        outcome.duplicated = delivered.count - unique.count
        var remaining = Dictionary(grouping: unique.map(view), by: { $0 }).mapValues(\.count)
        var lost: [String] = []
        for entry in expected.map(view) {
            if let count = remaining[entry], count > 0 {
                remaining[entry] = count - 1
            } else {
                lost.append(entry)
            }
        }
        outcome.lost = lost.count
        let extra = remaining.filter { $0.value > 0 }.map(\.key)
        outcome.textExact = lost.isEmpty && extra.isEmpty
        if outcome.duplicated > 0 { outcome.problems.append("\(outcome.duplicated) completed event(s) delivered twice") }
        if !lost.isEmpty { outcome.problems.append("lost: \(lost.map { String($0.prefix(120)) })") }
        if !extra.isEmpty { outcome.problems.append("not in the reference: \(extra.map { String($0.prefix(120)) })") }
    }

    /// The summary table (Markdown), one row per scenario × backend.
    static func table(_ outcomes: [FaultOutcome]) -> String {
        var lines = [
            "| scenario | backend | faults injected | expected | delivered | duplicated | lost | text exact | exit (expected) | peak RSS | REST read | result |",
            "|---|---|---|---:|---:|---:|---:|---|---|---:|---:|---|",
        ]
        for outcome in outcomes {
            let rss = String(format: "%.0f MB", outcome.peakRSSMegabytes)
            let rest = outcome.restBytes.map { String(format: "%.1f KB", Double($0) / 1000) } ?? "—"
            lines.append("| \(outcome.scenario) | \(outcome.backend) | \(outcome.faults) | \(outcome.expected) | \(outcome.delivered) | "
                + "\(outcome.duplicated) | \(outcome.lost) | \(outcome.textExact ? "yes" : "NO") | "
                + "\(outcome.exitStatus) (\(outcome.expectedExit)) | \(rss) | \(rest) | \(outcome.passed ? "ok" : "FAIL") |")
        }
        return lines.joined(separator: "\n")
    }
}
