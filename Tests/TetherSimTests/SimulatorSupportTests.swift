import Foundation
import Testing
@testable import TetherSim

/// The simulators' own building blocks: what they write must be valid wire, whatever shortcut
/// makes them fast.
@Suite("Simulator support")
struct SimulatorSupportTests {
    @Test("OrderedJSON strings read back exactly, escaped or copied whole", arguments: [
        "plain ascii", "", "quote \" and backslash \\", "tab\tnewline\nreturn\r", "bell \u{07} nul \u{00}",
        "line sep \u{2028} para sep \u{2029}", "arrow → café 🚀", "café 🚀 ünïcode", "\u{1F}", "→",
    ])
    func stringsRoundTrip(_ text: String) throws {
        let serialized = OrderedJSON.array([.string(text)]).serialized
        let parsed = try JSONSerialization.jsonObject(with: Data(serialized.utf8)) as? [String]
        #expect(parsed == [text])
        #expect(!serialized.contains("\u{2028}") && !serialized.contains("\u{2029}"))
        let rawControl = serialized.unicodeScalars.contains { $0.value < 0x20 }
        #expect(!rawControl)
    }

    @Test("OpenCode ids: prefix, 12 hex of clock, 14 base62, ascending and distinct")
    func openCodeIDs() {
        let ids = OpenCodeIDs()
        let made = (0..<2000).map { _ in ids.event() }
        let base62 = Set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        for id in made {
            let clockIsHex = id.dropFirst(4).prefix(12).allSatisfy(\.isHexDigit)
            let tailIsBase62 = id.suffix(14).allSatisfy { base62.contains($0) }
            #expect(id.hasPrefix("evt_") && id.count == 4 + 26)
            #expect(clockIsHex && tailIsBase62, "\(id)")
        }
        #expect(made == made.sorted())
        #expect(Set(made).count == made.count)
        let tails = Set(made.map { $0.suffix(14) })
        #expect(tails.count == made.count)
        let sessions = (0..<50).map { _ in ids.descending("ses") }
        #expect(sessions == sessions.sorted(by: >))
    }
}
