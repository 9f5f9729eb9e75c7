import Testing
@testable import TetherCodexMonitor

/// The reader routes notifications past the JSON parser on the strength of this scan: it must
/// never call a response a notification (the call would never get its answer), and it must
/// recognise the daemon's notifications, or the queue would hold parsed trees again.
@Suite struct CodexMonitorEnvelopeTests {
    func envelope(_ text: String) -> CodexMonitorEnvelope { CodexMonitorEnvelope.of(Array(text.utf8)) }

    @Test func theDaemonsNotificationsAreRecognised() {
        #expect(envelope(#"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"i","delta":"a \"quoted\" {brace} [x] \\"}}}}"#) == .notification)
        #expect(envelope(#"{"method":"terminal-exit","params":{"workspaceId":"ws-1","terminalId":"t1"}}"#) == .notification)
        #expect(envelope(#"{"method":"x"}"#) == .notification)
        #expect(envelope(#"  { "params" : [1, {"id": 5}, "]"] , "method" : "x" , "id" : null }  "#) == .notification)
        // An id inside params is not the envelope's.
        #expect(envelope(#"{"params":{"id":7,"method":3},"method":"x"}"#) == .notification)
        #expect(envelope(#"{"method":"x","params":{"n":-1.5e3,"ok":true,"none":null}}"#) == .notification)
    }

    @Test func responsesRequestsAndAnythingUncertainAreParsed() {
        #expect(envelope(#"{"id":3,"result":{"method":"x"}}"#) == .other)
        #expect(envelope(#"{"id":4,"error":{"message":"unauthorized"}}"#) == .other)
        #expect(envelope(#"{"result":{"ok":true},"id":4}"#) == .other)
        // A request from the daemon (an id that is not null) is not a notification.
        #expect(envelope(#"{"id":5,"method":"daemon/asks","params":{}}"#) == .other)
        #expect(envelope(#"{"method":"x","id":0}"#) == .other)
        #expect(envelope(#"{"method":"x","id":"null"}"#) == .other)
        // A method that is not a string, none at all, or one the scan cannot vouch for.
        #expect(envelope(#"{"method":7}"#) == .other)
        #expect(envelope(#"{"params":{"method":"x"}}"#) == .other)
        #expect(envelope(#"{"meth\u006fd":"x"}"#) == .other)
        #expect(envelope(#"{"method":"x","method":"y"}"#) == .other)
        #expect(envelope(#"{"method":"x","id":null,"id":3}"#) == .other)
        #expect(envelope(#"{}"#) == .other)
        // Not an object, or not only one.
        #expect(envelope(#"[{"method":"x"}]"#) == .other)
        #expect(envelope(#"{"method":"x"} {"id":1}"#) == .other)
        #expect(envelope(#"{"method":"x","params":{"a":"unterminated}"#) == .other)
        #expect(envelope(#"{"method":"x","params":{"a":[1,2}"#) == .other)
        #expect(envelope(#"{"method":"x",}"#) == .other)
        #expect(envelope(#"{"method" "x"}"#) == .other)
        #expect(envelope("this is not json") == .other)
        #expect(envelope("") == .other)
    }
}
