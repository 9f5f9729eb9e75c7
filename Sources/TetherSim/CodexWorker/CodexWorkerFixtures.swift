import Foundation

extension CodexWorkerSimulator {
    /// Ids, clocks and canned content shaped like the real worker's and codex's.
    enum Fixtures {
        // MARK: Ids

        /// `job_` / `appr_` + 16 hex characters, as the worker's `src/ids.js`.
        static func workerId(_ prefix: String) -> String {
            var generator = SystemRandomNumberGenerator()
            let value = generator.next() as UInt64
            let hex = String(value, radix: 16)
            return prefix + String(repeating: "0", count: 16 - hex.count) + hex
        }

        /// Codex thread and turn ids are UUIDv7 strings.
        static func uuidV7(now: Date = Date()) -> String {
            var bytes = [UInt8](repeating: 0, count: 16)
            var generator = SystemRandomNumberGenerator()
            for index in 6..<16 { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
            let millis = UInt64(max(0, now.timeIntervalSince1970 * 1000))
            for index in 0..<6 { bytes[index] = UInt8((millis >> (8 * (5 - UInt64(index)))) & 0xFF) }
            bytes[6] = (bytes[6] & 0x0F) | 0x70
            bytes[8] = (bytes[8] & 0x3F) | 0x80
            let hex = bytes.map { byte in
                let s = String(byte, radix: 16)
                return s.count == 1 ? "0" + s : s
            }.joined()
            let chars = Array(hex)
            return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(chars[$0]) }.joined(separator: "-")
        }

        /// Codex-style item ids (`call_…` for tools, `msg_…` for messages, `rs_…` for reasoning).
        static func itemId(_ prefix: String) -> String {
            var generator = SystemRandomNumberGenerator()
            let value = generator.next() as UInt64
            return prefix + "_" + String(value & 0xFFFF_FFFF, radix: 16)
        }

        // MARK: Clocks

        /// `2026-11-22T01:33:43.763Z`: the worker's `new Date().toISOString()`.
        static func iso(_ date: Date) -> String {
            date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }

        static func unixSeconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970) }
        static func unixMillis(_ date: Date) -> Int { Int(date.timeIntervalSince1970 * 1000) }

        // MARK: Catalogue

        static let models: JSON = [
            [
                "id": "gpt-5.1-codex", "name": "gpt-5.1-codex", "provider": "openai",
                "displayName": "GPT-5.1 Codex", "contextWindow": 272_000, "reasoning": true,
            ],
            [
                "id": "gpt-5.1-codex-mini", "name": "gpt-5.1-codex-mini", "provider": "openai",
                "displayName": "GPT-5.1 Codex Mini", "contextWindow": 272_000, "reasoning": true,
            ],
        ]

        static func displayName(ofProject path: String) -> String {
            let name = (path as NSString).lastPathComponent
            return name.isEmpty ? path : name
        }

        // MARK: Canned agent content

        static let reasoningSummary = "**Reading the request**\n\nWorking out what the user asked for."
        static let planText = "1. Read the project layout\n2. Make the change\n3. Run the tests"

        static let command = "/bin/bash -lc 'swift build && echo done'"
        static let commandActions: JSON = [["type": "unknown", "command": "swift build && echo done"]]
        static let proposedAmendment: JSON = ["swift", "build"]
        static let commandReason = "The agent wants to build the project"
        static let commandOutput = ["Building for debugging...\n", "Build complete! (0.42s)\n", "done\n"]
        static let commandDurationMs = 420

        static let editedFile = "README.md"
        static let fileDiff = "@@ -1 +1,2 @@\n # demo\n+Edited by the simulated Codex agent.\n"
        static let fileReason = "The agent wants to edit README.md"
        static let fileOutput = "Success. Updated the following files:\nM README.md\n"

        static let failureMessage = "stream disconnected before completion: simulated upstream failure (502 Bad Gateway)"

        static func reply(to prompt: String) -> String {
            let quoted = prompt.count > 200 ? String(prompt.prefix(200)) + "…" : prompt
            return "Hello from the simulated Codex worker. You said: \"\(quoted)\". Nothing else to do here."
        }

        static let commandAcceptedReply = "The build succeeded: `swift build` printed done."
        static let commandDeclinedReply = "Understood: I did not run `swift build`."
        static let fileAcceptedReply = "I added a line to README.md."
        static let fileDeclinedReply = "Understood: I left README.md unchanged."

        /// Splits a reply into word-sized deltas (each keeps its trailing space), like a model stream.
        static func deltas(of text: String) -> [String] {
            var out: [String] = []
            var current = ""
            for character in text {
                current.append(character)
                if character == " " || character == "\n" {
                    out.append(current)
                    current = ""
                }
            }
            if !current.isEmpty { out.append(current) }
            return out
        }

        static func longDeltas(_ count: Int) -> [String] {
            (0..<count).map { "token\($0) " }
        }
    }
}
