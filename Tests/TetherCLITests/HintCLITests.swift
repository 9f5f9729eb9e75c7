import Foundation
import Logging
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// Every command the CLI prints for the user to run works as printed: on a profile that is not
/// the default, from a config file that is not the default one, it carries `-p` and `--config`
/// (without them it went to the default profile and failed, or followed nothing).
@Suite(.serialized) struct HintCLITests {
    /// A config whose default profile is elsewhere (a port that refuses), with `name` for `url`.
    func configWithAnotherDefault(_ name: String, backend: String, url: URL, secret: String) throws -> TemporaryConfig {
        try TemporaryConfig("""
            default_profile = "elsewhere"
            [profiles.elsewhere]
            backend = "opencode"
            url = "http://127.0.0.1:9"
            [profiles.\(name)]
            backend = "\(backend)"
            url = "\(url.absoluteString)"
            \(secret)
            """)
    }

    /// The text after `label` on the first line of `text` that has it.
    func printed(after label: String, in text: String) -> String? {
        guard let line = text.split(separator: "\n").first(where: { $0.contains(label) }),
              let range = line.range(of: label) else { return nil }
        return String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces)
    }

    /// `send --follow -o text` prints `answer: tether -p oc --config PATH approve …`; run as
    /// printed, it answers the approval and the turn completes.
    @Test func theApprovalAnswerRunsAsPrinted() async throws {
        let simulator = OpenCodeSimulator(options: .init(password: "secret"))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try configWithAnotherDefault("oc", backend: "opencode", url: url, secret: "password = { env = \"OC_PW\" }")
        let env = ["OC_PW": "secret"]
        let global = ["-p", "oc", "--config", config.path]
        let session = try await TetherProcess.createSession(global, environment: env)
        let send = try TetherProcess(["send", session, OpenCodeCLITests.prompt, "--follow", "-o", "text"] + global, environment: env)
        let shown = try await send.waitForLine { $0.contains("answer: ") }
        let command = try #require(printed(after: "answer: ", in: shown))
        #expect(command.hasPrefix("tether -p oc --config \(config.path) approve "), "\(command)")

        let answer = try await TetherProcess.runPrinted(command, environment: env)
        #expect(answer.status == 0, "\(command): \(answer.stderr)")
        let result = try await send.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("turn") && result.stdout.contains("completed"), "\(result.stdout)")
    }

    /// A second `send` to a busy Codex Worker thread says how to follow or stop the running job;
    /// both commands work as printed against this profile (they reached the default one).
    @Test func theBusyThreadsHintsRunAsPrinted() async throws {
        let simulator = CodexWorkerSimulator(options: .init(token: "t0ken"), logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() })
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try configWithAnotherDefault("w", backend: "codex-worker", url: url, secret: "token = { env = \"W_TOKEN\" }")
        let env = ["W_TOKEN": "t0ken"]
        let global = ["-p", "w", "--config", config.path]
        let thread = try await TetherProcess.createSession(global, environment: env)
        let send = try TetherProcess(["send", thread, "run the build", "--follow"] + global, environment: env)
        let job = try #require(try await send.waitForEvent(.approvalRequested).turn)

        let busy = try await TetherProcess.run(["send", thread, "and another thing"] + global, environment: env)
        #expect(busy.status == 1)
        let follow = try #require(printed(after: "follow it: ", in: busy.stderr)?.split(separator: ";").first.map(String.init),
                                  "\(busy.stderr)")
        let stop = try #require(printed(after: "or stop it: ", in: busy.stderr), "\(busy.stderr)")
        #expect(follow == "tether -p w --config \(config.path) events --turn \(job) --follow", "\(follow)")

        let abort = try await TetherProcess.runPrinted(stop, environment: env)
        #expect(abort.status == 0, "\(stop): \(abort.stderr)")
        #expect(try await send.finish().status == 1)  // cancelled
        let followed = try await TetherProcess.runPrinted(follow, environment: env)
        #expect(followed.status == 0, "\(follow): \(followed.stderr)")
        #expect(try followed.events().last { $0.type == .turnCompleted }?.data["status"] == "cancelled")
    }

    /// A hint printed with an error (here: an unknown approval) carries the same arguments.
    @Test func anErrorsHintCarriesTheProfile() async throws {
        let simulator = OpenCodeSimulator(options: .init(password: "secret"))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try configWithAnotherDefault("oc", backend: "opencode", url: url, secret: "password = { env = \"OC_PW\" }")
        let result = try await TetherProcess.run(["approve", "per_nothing", "-p", "oc", "--config", config.path], environment: ["OC_PW": "secret"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("tether -p oc --config \(config.path) approvals"), "\(result.stderr)")
        #expect(!result.stderr.contains("`tether approvals`"), "\(result.stderr)")
    }

    /// A relative --config is printed absolute: the hint works from another directory too.
    @Test func aRelativeConfigPathIsPrintedAbsolute() async throws {
        let simulator = OpenCodeSimulator(options: .init(password: "secret"))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try configWithAnotherDefault("oc", backend: "opencode", url: url, secret: "password = { env = \"OC_PW\" }")
        let directory = (config.path as NSString).deletingLastPathComponent
        let result = try await TetherProcess.runPrinted("cd '\(directory)' && tether -p oc --config config.toml approve per_nothing",
                                                        environment: ["OC_PW": "secret"])
        #expect(result.stderr.contains("tether -p oc --config \(directory)/config.toml approvals"), "\(result.stderr)")
    }

    /// On the default profile from the default place, hints stay short.
    @Test func theDefaultsNeedNoArguments() async throws {
        let simulator = OpenCodeSimulator(options: .init(password: "secret"))
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("tether-home-\(UUID().uuidString)")
        let directory = home.appendingPathComponent(".config/tether")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try """
            [profiles.oc]
            backend = "opencode"
            url = "\(url.absoluteString)"
            password = { env = "OC_PW" }
            """.write(to: directory.appendingPathComponent("config.toml"), atomically: true, encoding: .utf8)
        let env = ["OC_PW": "secret", "HOME": home.path]
        let result = try await TetherProcess.run(["approve", "per_nothing", "-p", "oc"], environment: env)
        #expect(result.stderr.contains("`tether approvals`"), "\(result.stderr)")
    }
}
