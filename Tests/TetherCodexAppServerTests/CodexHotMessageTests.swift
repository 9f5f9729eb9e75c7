import Testing
import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// An app-server message read straight from its bytes (`CodexHotMessage.read`, the message on
/// its own, as the app-server sends it): what it reads, and what it leaves to the parser.
@Suite struct CodexHotMessageTests {
    static let delta = #"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"d"}}"#

    @Test func readsADeltaAndAnItemStartedInAnyKeyOrder() throws {
        #expect(CodexHotMessage.read(Array(Self.delta.utf8), strings: nil)
            == .delta(method: "item/agentMessage/delta", thread: "t", turn: "u", item: "m", delta: "d"))
        let reordered = #"{"params":{"delta":"d","itemId":"m","threadId":"t"},"emittedAtMs":1,"method":"item/commandExecution/outputDelta"}"#
        #expect(CodexHotMessage.read(Array(reordered.utf8), strings: nil)
            == .delta(method: "item/commandExecution/outputDelta", thread: "t", turn: nil, item: "m", delta: "d"))
        let started = #"{"method":"item/started","params":{"item":{"type":"agentMessage","id":"m","text":""},"threadId":"t","turnId":"u"}}"#
        #expect(CodexHotMessage.read(Array(started.utf8), strings: nil)
            == .itemStarted(thread: "t", turn: "u", item: try JSONParser.parse(#"{"type":"agentMessage","id":"m","text":""}"#)))
    }

    @Test("left to the parser", arguments: [
        #"{"id":3,"method":"item/agentMessage/delta","params":{"threadId":"t","itemId":"m","delta":"d"}}"#,  // a request
        #"{"method":"item/agentMessage/delta","params":null}"#,
        #"{"method":"item/agentMessage/delta","params":{"threadId":"t"},"params":{"itemId":"m","delta":"d"}}"#,  // repeated
        #"{"method":"item/agentMessage/delta","params":{"thread_id":"t","itemId":"m","delta":"d"}}"#,  // the other spelling
        #"{"method":"item/agentMessage/delta","params":{"threadId":"t","itemId":7,"delta":"d"}}"#,  // another type
        #"{"method":"item/agentMessage/delta","params":{"threadId":"t","item\u0049d":"m","delta":"d"}}"#,  // an escaped key
        #"{"method":"item/agentMessage/delta","params":{"threadId":"t","itemId":"m","delta":"a","delta":"b"}}"#,
        #"{"method":"item/agentMessage/delta","params":{"threadId":"t","itemId":"m"}}"#,  // no delta
        #"{"method":"item/started","params":{"threadId":"t","turnId":"u"}}"#,  // no item
        #"{"method":"item/completed","params":{"threadId":"t","item":{"type":"agentMessage","id":"m","text":"x"}}}"#,
        #"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u"}}}"#,
        #"{"id":2,"result":{}}"#,  // a response
        #"[1,2]"#,
        #"{"method":"item/agentMessage/delta","params":{"threadId":"t","itemId":"m","delta":"d"}} x"#,
    ])
    func leftToTheParser(_ text: String) {
        #expect(CodexHotMessage.read(Array(text.utf8), strings: nil) == nil)
    }

    @Test func aCutMessageIsNotRead() {
        let bytes = Array(Self.delta.utf8)
        for end in 0..<bytes.count {
            #expect(CodexHotMessage.read(Array(bytes[..<end]), strings: nil) == nil)
        }
    }
}
