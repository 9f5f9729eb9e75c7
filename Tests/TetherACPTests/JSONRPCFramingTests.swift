import Testing
import TetherCore
@testable import TetherACP
import TetherStreaming

@Suite struct JSONRPCFramingTests {
    @Test func readsRequestsNotificationsAndResponses() {
        #expect(JSONRPCMessage.parse(line: #"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}"#)
            == .message(.request(id: 7, method: "initialize", params: ["protocolVersion": 1])))
        #expect(JSONRPCMessage.parse(line: #"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#)
            == .message(.notification(method: "session/cancel", params: ["sessionId": "s"])))
        #expect(JSONRPCMessage.parse(line: #"{"jsonrpc":"2.0","id":"a","result":{"outcome":{"outcome":"cancelled"}}}"#)
            == .message(.response(id: "a", result: ["outcome": ["outcome": "cancelled"]])))
        #expect(JSONRPCMessage.parse(line: #"{"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"cancelled"}}"#)
            == .message(.errorResponse(id: 3, error: JSONRPCError(code: -32800, message: "cancelled"))))
    }

    @Test(arguments: ["garbage", "{", #"{"jsonrpc":"2.0","id":1"#, "\u{1}"])
    func aLineThatIsNotJSONIsAParseErrorWithANullID(line: String) {
        guard case .invalid(let id, let error) = JSONRPCMessage.parse(line: line) else {
            Issue.record("\(line) parsed")
            return
        }
        #expect(id == .null)
        #expect(error.code == -32700)
        let answer = JSONRPCMessage.errorResponse(id: id, error: error).line
        #expect(answer.hasPrefix(#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"#))
    }

    @Test(arguments: [
        (#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#, JSONValue.null),
        (#"{"id":4,"method":"x"}"#, JSONValue.int(4)),
        (#"{"jsonrpc":"2.0","id":5,"method":3}"#, JSONValue.int(5)),
        (#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#, JSONValue.null),
        (#"{"jsonrpc":"2.0","id":6,"method":"x","params":"p"}"#, JSONValue.int(6)),
        (#""just a string""#, JSONValue.null),
    ])
    func malformedMessagesAreInvalidRequests(line: String, id: JSONValue) {
        guard case .invalid(let answeredID, let error) = JSONRPCMessage.parse(line: line) else {
            Issue.record("\(line) parsed")
            return
        }
        #expect(answeredID == id)
        #expect(error.code == -32600)
    }

    @Test func writesOneCompactLine() {
        let line = JSONRPCMessage.notification(method: "session/update", params: ["sessionId": "s", "update": ["text": "a\nb"]]).line
        #expect(line == #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"text":"a\nb"}}}"#)
        #expect(!line.contains("\n"))
    }

    @Test func backendErrorsSayWhatFailedAndWhatToDo() {
        let error = JSONRPCError.backend(TetherError(.notFound, "session ses_1 not found", hint: "list them with `tether sessions list`"),
                                         doing: "loading session ses_1")
        #expect(error.code == -32002)
        #expect(error.message == "loading session ses_1 failed: session ses_1 not found — list them with `tether sessions list`")
        #expect(JSONRPCError.backend(TetherError(.unavailable, "down"), doing: "x").code == -32603)
    }
}
