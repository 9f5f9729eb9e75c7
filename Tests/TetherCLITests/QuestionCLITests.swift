import Foundation
import Testing
import TetherCore
import TetherSim
@testable import TetherTestSupport

/// OpenCode questions (`question.asked`): shown with their choices and a command that answers
/// them (`approve ID --answer CHOICE`), which works; a decision alone is refused with the way
/// that works, not sent to fail.
@Suite(.serialized) struct QuestionCLITests {
    let env = ["OC_PW": "secret"]
    static let prompt = "ask me which directory to choose"

    /// OpenCode 1.x (`question.asked`, `/question/{id}/reply {answers}`) or 2.x (a form,
    /// `…/form/{id}/reply {answer}` keyed by field, `DELETE` to dismiss).
    static let generations = [1, 2]

    func withQuestion(generation: Int = 1, _ body: ([String], TetherProcess, Event) async throws -> Void) async throws {
        var options = OpenCodeSimulator.Options(password: "secret")
        options.generation = generation
        try await withSimulatedOpenCode(options) { global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow"] + global, environment: env)
            let question = try await send.waitForEvent(.approvalRequested)
            #expect(question.data["kind"] == "question")
            try await body(global, send, question)
        }
    }

    @Test(arguments: generations) func answeredByItsChoice(_ generation: Int) async throws {
        try await withQuestion(generation: generation) { global, send, question in
            let id = try #require(question.data["id"]?.string)
            let answered = try await TetherProcess.run(["approve", id, "--answer", "DIST"] + global, environment: env)
            #expect(answered.status == 0, "\(answered.stderr)")
            #expect(try answered.events().first?.data["decision"] == "answered")
            let result = try await send.finish()
            #expect(result.status == 0, "\(result.stderr)")
            let tool = try result.events().last { $0.type == .partCompleted && $0.data["tool"] == "question" }
            #expect(tool?.data["output"]?.string?.contains("dist") == true, "\(String(describing: tool))")
        }
    }

    /// 2.x: a form's field is named by its key (`--answer q0=dist`), and the reply is keyed by it.
    @Test func aFormFieldIsAnsweredByItsKey() async throws {
        var options = OpenCodeSimulator.Options(password: "secret")
        options.generation = 2
        let simulator = OpenCodeSimulator(options: options)
        let url = try await simulator.start()
        defer { Task { await simulator.stop() } }
        let config = try TemporaryConfig("""
            [profiles.oc]
            backend = "opencode"
            url = "\(url.absoluteString)"
            password = "secret"
            """)
        let global = ["--config", config.path]
        let session = try await TetherProcess.createSession(global, environment: env)
        let send = try TetherProcess(["send", session, Self.prompt, "--follow"] + global, environment: env)
        let id = try #require(try await send.waitForEvent(.approvalRequested).data["id"]?.string)
        let answered = try await TetherProcess.run(["approve", id, "--answer", "q0=dist"] + global, environment: env)
        #expect(answered.status == 0, "\(answered.stderr)")
        let reply = await simulator.requests().first { $0.method == "POST" && $0.path.hasSuffix("/reply") }
        #expect(reply.map { String(decoding: $0.body, as: UTF8.self) } == #"{"answer":{"q0":"dist"}}"#)
        #expect(try await send.finish().status == 0)
    }

    @Test(arguments: generations) func aDecisionAloneIsRefusedWithTheCommandThatWorks(_ generation: Int) async throws {
        try await withQuestion(generation: generation) { global, send, question in
            let id = try #require(question.data["id"]?.string)
            let refused = try await TetherProcess.run(["approve", id, "--decision", "accept"] + global, environment: env)
            #expect(refused.status == 64, "\(refused.stderr)")
            #expect(refused.stderr.contains("--answer"), "\(refused.stderr)")
            let wrong = try await TetherProcess.run(["approve", id, "--answer", "src"] + global, environment: env)
            // `custom` is unset: OpenCode takes typed text too, so only a stricter question refuses.
            #expect(wrong.status == 0, "\(wrong.stderr)")
            #expect(try await send.finish().status == 0)
        }
    }

    @Test(arguments: generations) func dismissedByDeclining(_ generation: Int) async throws {
        try await withQuestion(generation: generation) { global, send, question in
            let id = try #require(question.data["id"]?.string)
            let dismissed = try await TetherProcess.run(["approve", id, "--decision", "decline"] + global, environment: env)
            #expect(dismissed.status == 0, "\(dismissed.stderr)")
            #expect(try dismissed.events().first?.data["decision"] == "rejected")
            let events = try await send.finish().events()
            #expect(events.last { $0.type == .partCompleted && $0.data["tool"] == "question" }?.data["status"] == "failed")
        }
    }

    /// The readable view shows the choices and the commands that answer or dismiss.
    @Test func theTextViewShowsTheChoicesAndTheCommand() async throws {
        try await withSimulatedOpenCode { global in
            let session = try await TetherProcess.createSession(global, environment: env)
            let send = try TetherProcess(["send", session, Self.prompt, "--follow", "-o", "text"] + global, environment: env)
            let line = try await send.waitForLine { $0.contains("answer: ") }
            let shown = send.stdoutLines.joined(separator: "\n")
            #expect(shown.contains("Which directory should I clean?") && shown.contains("1) build") && shown.contains("2) dist"), "\(shown)")
            let command = try #require(line.components(separatedBy: "answer: ").last)
            #expect(command.hasSuffix("--answer build"), "\(command)")
            #expect(try await TetherProcess.runPrinted(command, environment: env).status == 0)
            #expect(try await send.finish().status == 0)
        }
    }
}
