import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// The README's commands, run as a reader would run them: every `sh` block says whether it runs
/// against a simulator (`<!-- readme-test: runs against opencode -->`) or why not; those that run
/// are run in order as one bash script (`set -e`: every command must succeed) with the built
/// binary on PATH, a fresh HOME, and the simulator the block expects at 127.0.0.1:4096 (its
/// real port substituted). Every `jq` program in the README is run on the turn's events and must
/// print something other than `null` (the walkthrough's printed `null` for every tool part).
@Suite(.serialized) struct ReadmeCLITests {
    struct Block {
        let marker: String
        let code: String
        let line: Int
    }

    static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("README.md")

    /// Every ```sh block with the marker on the line before it (empty when none).
    static func shellBlocks(_ text: String) -> [Block] {
        let lines = text.components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            if lines[index] == "```sh" {
                let marker = index > 0 ? lines[index - 1] : ""
                var code: [String] = []
                var end = index + 1
                while end < lines.count, lines[end] != "```" { code.append(lines[end]); end += 1 }
                blocks.append(Block(marker: marker, code: code.joined(separator: "\n"), line: index + 1))
                index = end
            }
            index += 1
        }
        return blocks
    }

    /// The programs given to `jq` in single quotes anywhere in the README.
    static func jqPrograms(_ text: String) -> [String] {
        let pattern = try! NSRegularExpression(pattern: #"jq(?: -[a-z]+)* '([^']+)'"#)
        let range = NSRange(text.startIndex..., in: text)
        return pattern.matches(in: text, range: range).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } }
    }

    @Test func everyShellBlockSaysWhetherItRuns() throws {
        let blocks = Self.shellBlocks(try String(contentsOf: Self.readme, encoding: .utf8))
        #expect(blocks.count >= 3)
        for block in blocks {
            let runs = block.marker == "<!-- readme-test: runs against opencode -->"
            let skipped = block.marker.hasPrefix("<!-- readme-test: not run (") && block.marker.hasSuffix(") -->")
            #expect(runs || skipped, "README.md:\(block.line): a sh block without a readme-test marker: \(block.marker)")
        }
    }

    @Test func theRunnableBlocksRunAgainstTheSimulator() async throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        let runnable = Self.shellBlocks(text).filter { $0.marker == "<!-- readme-test: runs against opencode -->" }
        #expect(runnable.count >= 2)

        let simulator = OpenCodeSimulator(options: .init(pacing: .milliseconds(5)))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let port = try #require(url.port)
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("tether-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)

        let script = (["set -euo pipefail", "cd \"$HOME\""] + runnable.map(\.code)).joined(separator: "\n")
            .replacingOccurrences(of: "127.0.0.1:4096", with: "127.0.0.1:\(port)")
        let path = home.appendingPathComponent("readme.sh").path
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        let binDir = TetherProcess.binary.deletingLastPathComponent().path
        let env = ["HOME": home.path, "PATH": binDir + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        let result = try await TetherProcess(["-e", path], environment: env, executable: "/bin/bash").finish(timeout: .seconds(90))
        #expect(result.status == 0, "README script failed (\(result.status))\n--- stdout\n\(result.stdout)\n--- stderr\n\(result.stderr)")
        #expect(result.stdout.contains("text: Clean the build dir and say done"), "\(result.stdout)")
        #expect(result.stdout.contains("command: rm -rf build"), "\(result.stdout)")

        // Every jq program in the README, on the events of the turn the script ran.
        let turn = home.appendingPathComponent("turn.jsonl").path
        let programs = Self.jqPrograms(text).filter { $0 != ".session" }
        #expect(programs.count >= 2)
        for program in programs {
            let jq = try await TetherProcess(["-r", program, turn], environment: env, executable: "/usr/bin/jq").finish()
            #expect(jq.status == 0, "jq '\(program)': \(jq.stderr)")
            let lines = jq.stdout.split(separator: "\n")
            #expect(!lines.isEmpty, "jq '\(program)' printed nothing")
            #expect(!lines.contains { $0 == "null" || $0.hasSuffix(": null") }, "jq '\(program)' printed null:\n\(jq.stdout)")
        }
    }
}
