import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// The CodexMonitor daemon's wire read without a daemon: one line of its newline JSON-RPC in,
/// the normalized events it means out. A notification is classified and mapped as the event
/// stream does (``CodexMonitorRPC/Message``, ``CodexAppServerMapper``); a response carrying
/// a thread (a `resume_thread` answer) is unwrapped and read both ways the backend reads one:
/// reconciled into the stream, and as `history`. Public for tools that replay recorded
/// traffic, and for the fuzz targets (`Fuzz/`).
public struct CodexMonitorWireDecoder {
    private var mapper = CodexAppServerMapper()
    /// The workspace that threads in responses belong to (a response does not name it).
    public let workspace: String

    private let keepingRaw: Bool

    /// `keepingRaw`: each event carries its wire message as `raw`. Without it, item deltas and
    /// `item/started` are read straight from the bytes (`CodexMonitorHotLine`), as the live
    /// stream reads them when `--raw` is not asked for; the events are the same but for `raw`.
    public init(workspace: String, keepingRaw: Bool = true) {
        self.workspace = workspace
        self.keepingRaw = keepingRaw
    }

    /// What one line (without its newline) means: `nil` when it is not JSON or not a response
    /// or notification (the client logs and skips those lines).
    public mutating func events(fromLine line: [UInt8]) -> [Event]? {
        if !keepingRaw, let hot = CodexMonitorHotLine.read(line, strings: nil) { return mapper.map(hot) }
        guard let value = try? JSONParser.parse(line) else { return nil }
        switch CodexMonitorRPC.Message.classify(value) {
        case .notification(let method, let params):
            var events = mapper.map(method: method, params: params)
            if keepingRaw { for index in events.indices where events[index].raw == nil { events[index].raw = value } }
            return events
        case .response(_, .success(let result)):
            guard case .success(let unwrapped) = CodexMonitorResult.unwrap(result),
                  let thread = unwrapped["thread"], thread["id"] != nil else { return [] }
            return mapper.reconcile(scope: workspace, thread: thread)
                + CodexAppServerMapper.history(scope: workspace, thread: thread, limit: nil)
        case .response(_, .failure):
            return []
        case .request, .invalid:
            return nil
        }
    }

    /// The approvals still waiting, as `tether approvals` lists them.
    public var pendingApprovals: [Approval] { mapper.approvals() }
}
