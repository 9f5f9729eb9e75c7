import Testing
import TetherTestSupport
import TetherCore
@testable import TetherCodexMonitor
import TetherStreaming

/// Item deltas and `item/started` read straight from their lines (`CodexMonitorHotLine`, used
/// when `--raw` is not asked for) must mean exactly what the same lines parsed whole mean.
@Suite struct CodexMonitorHotLineTests {
    static let thread = "019a0000-f100-7000-8000-000000000001"
    static let turn = "019a0000-f100-7000-8000-000000000002"

    static func event(_ method: String, _ params: String, workspace: String = #""workspace_id":"ws-1""#) -> String {
        #"{"method":"app-server-event","params":{\#(workspace),"message":{"method":"\#(method)","params":\#(params),"emittedAtMs":1795724256188}}}"#
    }

    static func delta(_ method: String = "item/agentMessage/delta", item: String, _ delta: String) -> String {
        event(method, #"{"threadId":"\#(thread)","turnId":"\#(turn)","itemId":"\#(item)","delta":"\#(delta)"}"#)
    }

    /// A turn in lines of every shape the delta read takes, and ones it must leave to the parser.
    static let lines: [(line: String, read: Bool)] = [
        (event("turn/started", #"{"threadId":"\#(thread)","turn":{"id":"\#(turn)","items":[],"status":"inProgress"}}"#), false),
        (event("item/started", #"{"item":{"type":"agentMessage","id":"msg_1","text":""},"threadId":"\#(thread)","turnId":"\#(turn)"}"#), true),
        // Items of other shapes: nested, an escaped key and a repeated one inside the item (the
        // parser reads the item either way), the item last, an item that is not an object.
        (event("item/started", #"{"threadId":"\#(thread)","turnId":"\#(turn)","item":{"type":"commandExecution","id":"cmd_1","command":"ls -la","commandActions":[{"type":"listFiles","cmd":"ls"}],"cwd":"/w","status":"inProgress","aggregatedOutput":null,"exitCode":null}}"#), true),
        (event("item/started", #"{"threadId":"\#(thread)","turnId":"\#(turn)","item":{"type":"reasoning","id":"rs_1","summary":[],"content":[],"st\u0061tus":"x","id":"rs_9"}}"#), true),
        (event("item/started", #"{"threadId":"\#(thread)","turnId":"\#(turn)","item":{"type":"plan","id":"plan_1","text":"1. a"}}"#), true),
        (event("item/started", #"{"threadId":"\#(thread)","turnId":"\#(turn)","item":"not an item"}"#), true),
        (event("item/started", #"{"item":{"type":"agentMessage","id":"msg_3","text":""},"turnId":"\#(turn)"}"#), true),  // no thread: nothing
        (event("item/started", #"{"item":{"type":"agentMessage","id":"msg_4","text":""},"threadId":"\#(thread)"}"#), true),  // no turn
        (delta(item: "msg_1", "Hel"), true),
        (delta(item: "msg_1", #"lo \"w\u00f6rld\"\n"#), true),
        // Keys in another order, the line's method last.
        (#"{"params":{"message":{"params":{"delta":"!","itemId":"msg_1","turnId":"\#(turn)","threadId":"\#(thread)"},"method":"item/agentMessage/delta"},"workspace_id":"ws-1"},"method":"app-server-event"}"#, true),
        // Every kind of delta; one for an item never started, one without a turn.
        (delta("item/reasoning/summaryTextDelta", item: "rs_1", "think"), true),
        (delta("item/reasoning/textDelta", item: "rs_1", "ing"), true),
        (delta("item/plan/delta", item: "plan_1", "1. x"), true),
        (delta("item/commandExecution/outputDelta", item: "cmd_1", #"out\n"#), true),
        (delta("item/fileChange/outputDelta", item: "fc_1", "patched"), true),
        (event("item/agentMessage/delta", #"{"threadId":"\#(thread)","itemId":"msg_2","delta":"no turn"}"#), true),
        // Left to the parser: other spellings, an escaped key, a field of another type, a
        // repeated key, an empty delta, a request, another method, another workspace spelling.
        (event("item/agentMessage/delta", #"{"thread_id":"\#(thread)","turnId":"\#(turn)","itemId":"msg_1","delta":"snake"}"#), false),
        (delta(item: "msg_1", "ws").replacingOccurrences(of: "workspace_id", with: "workspaceId"), false),
        (event("item/agentMessage/delta", #"{"threadId":"\#(thread)","turnId":"\#(turn)","item\u0049d":"msg_1","delta":"esc"}"#), false),
        (event("item/agentMessage/delta", #"{"threadId":"\#(thread)","turnId":"\#(turn)","itemId":7,"delta":"num"}"#), false),
        (event("item/agentMessage/delta", #"{"threadId":"\#(thread)","turnId":"\#(turn)","itemId":"msg_1","delta":"a","delta":"b"}"#), false),
        (event("item/commandExecution/requestApproval", #"{"threadId":"\#(thread)","turnId":"\#(turn)","itemId":"cmd_1","command":"ls"}"#), false),
        (event("thread/tokenUsage/updated", #"{"threadId":"\#(thread)","turnId":"\#(turn)","tokenUsage":{"total":{"inputTokens":5}}}"#), false),
        (#"{"method":"terminal-output","params":{"workspaceId":"ws-1","terminalId":"t1","data":"x"}}"#, false),
        (event("item/started", #"{"item":{"type":"agentMessage","id":"msg_5","text":""},"thread_id":"\#(thread)","turnId":"\#(turn)"}"#), false),
        (event("item/started", #"{"item":{"type":"agentMessage","id":"msg_5","text":""},"item":{"type":"agentMessage","id":"msg_6","text":""},"threadId":"\#(thread)"}"#), false),
        (event("item/started", #"{"\u0069tem":{"type":"agentMessage","id":"msg_5","text":""},"threadId":"\#(thread)"}"#), false),
        (event("item/started", #"{"threadId":"\#(thread)","turnId":"\#(turn)"}"#), false),  // no item: left to the parser
        (event("item/started", #"{"threadId":"\#(thread)","turnId":[],"item":{"type":"agentMessage","id":"msg_5","text":""}}"#), false),
        // A repeated object: the tree keeps the first, whose fields are not all there.
        (event("item/started", #"{"threadId":"\#(thread)"},"params":{"turnId":"\#(turn)","item":{"type":"agentMessage","id":"msg_7","text":""}}"#), false),
        (#"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"item/agentMessage/delta","params":{"threadId":"\#(thread)","itemId":"msg_1"}},"message":{"method":"item/agentMessage/delta","params":{"delta":"two"}}}}"#, false),
        (#"{"method":"app-server-event","params":{"workspace_id":"ws-1"},"params":{"message":{"method":"item/agentMessage/delta","params":{"threadId":"\#(thread)","itemId":"msg_1","delta":"x"}}}}"#, false),
        (event("item/completed", #"{"item":{"type":"agentMessage","id":"msg_1","text":"Hello"},"threadId":"\#(thread)","turnId":"\#(turn)"}"#), false),
        (event("turn/completed", #"{"threadId":"\#(thread)","turn":{"id":"\#(turn)","items":[],"status":"completed"}}"#), false),
    ]

    @Test func theHotLinesAreReadWithoutTheLinesTree() throws {
        for (line, read) in Self.lines {
            #expect((CodexMonitorHotLine.read(Array(line.utf8), strings: nil) != nil) == read, "\(line)")
        }
        let request = #"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"id":3,"method":"item/agentMessage/delta","params":{"threadId":"t","itemId":"i","delta":"d"}}}}"#
        #expect(CodexMonitorHotLine.read(Array(request.utf8), strings: nil) == nil)
        let startRequest = #"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"item/started","params":{"threadId":"t","item":{"type":"agentMessage","id":"m"}},"id":4}}}"#
        #expect(CodexMonitorHotLine.read(Array(startRequest.utf8), strings: nil) == nil)
        // What an item/started reads: the item as the parser builds it, and where it belongs.
        let start = try #require(CodexMonitorHotLine.read(Array(Self.lines[1].line.utf8), strings: nil))
        let item = try JSONParser.parse(#"{"type":"agentMessage","id":"msg_1","text":""}"#)
        #expect(start == CodexMonitorHotLine(workspace: "ws-1", message: .itemStarted(thread: Self.thread, turn: Self.turn, item: item)))
    }

    @Test func readWithoutATreeTheEventsAreTheSame() throws {
        var whole = CodexMonitorWireDecoder(workspace: "ws-1")
        var read = CodexMonitorWireDecoder(workspace: "ws-1", keepingRaw: false)
        var all: [Event] = []
        for (line, _) in Self.lines {
            let wholeEvents = whole.events(fromLine: Array(line.utf8))
            let readEvents = read.events(fromLine: Array(line.utf8))
            let expected = try #require(wholeEvents)
            let got = try #require(readEvents)
            #expect(got.stamped(at: 0) == expected.withoutRaw.stamped(at: 0), "\(line)")
            all += got
        }
        // The turn did stream (a comparison of nothing would pass too).
        let deltas = all.filter { $0.type == .partDelta }
        #expect(deltas.count == 13)  // nine read straight, four parsed
        #expect(deltas.first?.session == "ws-1~\(Self.thread)")
        #expect(Set(deltas.compactMap { $0.data["kind"]?.string }) == ["text", "reasoning", "plan", "command", "file_change"])
        #expect(all.first { $0.type == .partCompleted && $0.part == "msg_1" }?.data["text"] == "Hello")
        // The items started, read straight or parsed: each part once, the unthreaded one not at all.
        let started = all.filter { $0.type == .partStarted }.compactMap(\.part)
        #expect(started.filter { $0 == "msg_1" }.count == 1)
        #expect(Set(started).isSuperset(of: ["msg_1", "cmd_1", "rs_1", "plan_1", "msg_4", "msg_5"]))
        #expect(!started.contains("msg_3") && !started.contains("rs_9") && !started.contains("msg_7"))
        #expect(all.first { $0.type == .partStarted && $0.part == "cmd_1" }?.data["command"] == "ls -la")
    }

    @Test func aBrokenLineIsNotReadEitherWay() {
        for line in [Self.delta(item: "msg_1", "x"), Self.lines[1].line] {
            let bytes = Array(line.utf8)
            #expect(CodexMonitorHotLine.read(bytes, strings: nil) != nil)
            for end in 0..<bytes.count {
                #expect(CodexMonitorHotLine.read(Array(bytes[..<end]), strings: nil) == nil)
            }
        }
    }

    /// Every busy word keeps a slot of its own in the reader's table: each reads back as the
    /// literal itself, not as a copy (two words in one slot would leave one of them a copy).
    @Test func everyBusyWordReadsBackAsItsLiteral() {
        #expect(wordsNotReadAsTheirLiterals(CodexMonitorHotLine.busyWords).isEmpty)
    }

    @Test func theMachineKeepsOtherWorkspacesOutOfHotLinesToo() throws {
        var machine = CodexMonitorStreamMachine(
            request: EventsRequest(follow: true, raw: false),
            configuration: .init(target: nil, filtersWorkspaces: true, keepalive: .seconds(30), endpoint: "127.0.0.1:4732", hasPrompt: false))
        _ = machine.resynced(CodexMonitorSnapshot(watched: ["ws-1"], threads: [], missing: []), at: 1)
        let elsewhere = try #require(CodexMonitorHotLine.read(Array(Self.delta(item: "m", "x").replacingOccurrences(of: "ws-1", with: "ws-2").utf8), strings: nil))
        #expect(machine.receive(elsewhere, at: 2).isEmpty)
        let startedElsewhere = try #require(CodexMonitorHotLine.read(Array(Self.lines[1].line.replacingOccurrences(of: "ws-1", with: "ws-2").utf8), strings: nil))
        #expect(machine.receive(startedElsewhere, at: 2).isEmpty)
        let here = try #require(CodexMonitorHotLine.read(Array(Self.delta(item: "m", "x").utf8), strings: nil))
        let actions = machine.receive(here, at: 3)
        guard case .emit(let events)? = actions.first else {
            Issue.record("expected events, got \(actions)")
            return
        }
        #expect(events.map(\.type) == [.turnStarted, .sessionStatus, .partStarted, .partDelta])
        #expect(events.allSatisfy { $0.ts == 3 && $0.raw == nil })
        let started = try #require(CodexMonitorHotLine.read(Array(Self.lines[1].line.utf8), strings: nil))
        guard case .emit(let startEvents)? = machine.receive(started, at: 4).first else {
            Issue.record("expected events for item/started")
            return
        }
        #expect(startEvents.map(\.type) == [.partStarted])
        #expect(startEvents.first?.part == "msg_1" && startEvents.first?.ts == 4)
    }
}
