import Logging
import Synchronization
import Testing
import TetherCore
@testable import TetherCodexAppServer
import TetherCodexProtocol
import TetherStreaming

/// A link whose server side is the test: what Tether sends is recorded, what the "server"
/// says is queued for `receive`.
final class ScriptedLink: CodexAppServerLink {
    let endpoint = "test"
    private let sent = Mutex<[String]>([])
    private let inbound = AsyncStream<[String]?>.makeStream()

    func send(_ text: String) async throws { sent.withLock { $0.append(text) } }
    func receive() async throws -> [[UInt8]]? {
        for await texts in inbound.stream { return texts.map { $0.map { Array($0.utf8) } } ?? nil }
        return nil
    }
    func close() async { inbound.continuation.finish() }

    func server(_ texts: String...) { inbound.continuation.yield(texts) }
    func hangUp() { inbound.continuation.yield(nil) }
    var sentTexts: [String] { sent.withLock { $0 } }

    /// The id of the `index`-th message sent (from 0), once it has been.
    func callID(_ index: Int) async throws -> Int64 {
        for _ in 0..<200 {
            let sent = sentTexts
            if sent.count > index, let id = try JSONParser.parse(sent[index])["id"]?.int { return Int64(id) }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw CancellationError()
    }
}

private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

@Suite("codex JSON-RPC: calls by id, everything else handed on, bounded per consumer")
struct CodexAppServerRPCTests {
    @Test("a response answers its call; the server's requests and notifications go to the consumer, garbage nowhere")
    func routing() async throws {
        let link = ScriptedLink()
        let inbox = CodexAppServerInbox(capacity: 1 << 20)
        let rpc = CodexAppServerRPC(link: link, logger: logger) { incoming, _ in
            if case .messages(let messages, let bytes) = incoming { try? await inbox.send(contentsOf: messages, weight: bytes) }
        }
        rpc.start()
        async let answer = rpc.call("thread/list", params: [:], timeout: .seconds(5))
        let id = try await link.callID(0)
        // No `jsonrpc` field on the wire, as Codex sends none.
        #expect(try JSONParser.parse(link.sentTexts.last!)["jsonrpc"] == nil)
        link.server("not json", #"{"method":"thread/status/changed","params":{"threadId":"t"}}"#,
                    #"{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"t"}}"#,
                    #"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"d"}}"#,
                    #"{"id":\#(id),"result":{"data":[]}}"#)
        #expect(try await answer["data"] == [])
        // What came before the response was handed on before the call was answered.
        guard case .batch(let messages, let lost) = try await inbox.next(timeout: .zero) else {
            Issue.record("nothing handed on")
            return
        }
        #expect(lost == 0)
        #expect(messages.map { $0.json["method"]?.string } == ["thread/status/changed", "item/commandExecution/requestApproval", "item/agentMessage/delta"])
        // Decoded ahead: the delta read straight from its bytes, the request parsed whole.
        #expect(messages[2] == .hot(.delta(method: "item/agentMessage/delta", thread: "t", turn: "u", item: "m", delta: "d"),
                                    text: Array(#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"d"}}"#.utf8)))
        #expect(messages[1].whole?["id"] == 0)
    }

    @Test("Codex's errors: overloaded and draining are told apart; a hang-up fails the calls waiting")
    func errors() async throws {
        let link = ScriptedLink()
        let rpc = CodexAppServerRPC(link: link, logger: logger) { _, _ in }
        rpc.start()
        async let overloaded = outcome(rpc, "turn/start")
        let first = try await link.callID(0)
        link.server(#"{"error":{"code":-32001,"message":"Server overloaded; retry later."},"id":\#(first)}"#)
        guard case .failure(.remote(let error)) = await overloaded else { Issue.record("not a remote error"); return }
        #expect(error.isOverloaded && !error.isShuttingDown)

        async let draining = outcome(rpc, "thread/start")
        let second = try await link.callID(1)
        #expect(second != first)
        link.server(#"{"error":{"code":-32600,"data":{"reason":"serverShuttingDown"},"message":"Server is draining; retry after reconnecting"},"id":\#(second)}"#)
        guard case .failure(.remote(let drain)) = await draining else { Issue.record("not a remote error"); return }
        #expect(drain.isShuttingDown)
        #expect(CodexAppServerClient.tetherError(drain, doing: "starting a thread").retryable)

        async let cut = outcome(rpc, "thread/read")
        _ = try await link.callID(2)
        link.hangUp()
        guard case .failure(.closed) = await cut else { Issue.record("the call did not fail with the connection"); return }
    }

    @Test("a full inbox holds the reader up; a call that starts makes it read on, dropping what does not fit, so its response is read")
    func aCallReleasesAHeldReader() async throws {
        let link = ScriptedLink()
        let inbox = CodexAppServerInbox(capacity: 100)
        let rpc = CodexAppServerRPC(link: link, logger: logger, onCall: { inbox.rouseProducers() }) { incoming, rpc in
            if case .messages(let messages, let bytes) = incoming {
                _ = try? await inbox.send(contentsOf: messages, weight: bytes, mayWait: { !rpc.hasCallsWaiting })
            }
        }
        rpc.start()
        for index in 0..<3 { link.server(#"{"method":"thread/status/changed","params":{"threadId":"t\#(index)"}}"#) }
        // Two fill the inbox; the reader parks with the third.
        let deadline = ContinuousClock.now + .seconds(5)
        while inbox.parkedProducers < 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(inbox.parkedProducers == 1, "the reader did not park")
        async let answer = rpc.call("thread/list", params: [:], timeout: .seconds(5))
        let id = try await link.callID(0)
        link.server(#"{"id":\#(id),"result":{"data":[]}}"#)
        #expect(try await answer["data"] == [])  // read though nobody took from the inbox
        guard case .batch(let messages, let lost) = try await inbox.next(timeout: .zero) else {
            Issue.record("nothing handed on")
            return
        }
        #expect(messages.map { $0.json["params"]?["threadId"]?.string } == ["t0", "t1"])
        #expect(lost == 1)
    }

    @Test("Codex's refusals read as what they mean")
    func refusals() {
        func code(_ message: String) -> TetherError.Code {
            CodexAppServerClient.tetherError(.init(code: -32600, message: message, data: nil), doing: "x").code
        }
        #expect(code("thread not found: 01a2") == .notFound)
        #expect(code("no rollout found for thread id 01a2") == .notFound)
        #expect(code("thread 01a2 already has an active writer") == .conflict)
        #expect(code("no active turn to interrupt") == .conflict)
        #expect(code("Invalid request: missing field `threadId`") == .failed)
    }
}

/// A call's outcome, its typed failure kept.
func outcome(_ rpc: CodexAppServerRPC, _ method: String) async -> Result<JSONValue, CodexAppServerRPC.Failure> {
    do {
        return .success(try await rpc.call(method, params: [:], timeout: .seconds(5)))
    } catch {
        return .failure(error)
    }
}

@Suite("codex questions: requestUserInput's answer")
struct CodexQuestionAnswerTests {
    let questions: [JSONValue] = [["id": "q1", "question": "Which way?"], ["id": "q2", "question": "How fast?"]]

    @Test("each question's choices under its id; a decline answers nothing; a missing answer is a usage error")
    func answers() throws {
        let result = try CodexDecision.userInputResult(for: ApprovalAnswer(decision: .accept, answers: [["left"], ["slow", "steady"]]),
                                                       questions: questions)
        #expect(result == ["answers": ["q1": ["answers": ["left"]], "q2": ["answers": ["slow", "steady"]]]])
        #expect(try CodexDecision.userInputResult(for: ApprovalAnswer(decision: .decline), questions: questions) == ["answers": [:]])
        #expect(throws: TetherError.self) {
            try CodexDecision.userInputResult(for: ApprovalAnswer(decision: .accept, answers: [["left"]]), questions: questions)
        }
        // Codex's question shape, as the CLI's question form reads questions.
        let shown = CodexDecision.question(["id": "q1", "header": "H", "question": "Q", "isOther": true, "isSecret": false,
                                            "options": [["label": "a", "description": "d"]]])
        #expect(shown["options"]?[0]?["label"] == "a")
        #expect(shown["custom"] == true)
    }
}
