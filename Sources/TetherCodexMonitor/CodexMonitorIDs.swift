import TetherCore

/// Self-contained ids. A CodexMonitor thread is only reachable through its workspace, and an
/// approval is answered by workspace + the app-server's request id, so Tether's ids carry both
/// (`CompositeID`): a session is `WORKSPACE~THREAD`, an approval `WORKSPACE~THREAD~REQUEST~KIND~TURN~ITEM`.
enum CodexMonitorSessionID {
    static func make(workspace: String, thread: String) -> String {
        CompositeID.join([workspace, thread])
    }

    static func parse(_ id: String) -> (workspace: String, thread: String)? {
        guard let parts = CompositeID.split(id, count: 2) else { return nil }
        return (parts[0], parts[1])
    }
}

/// An approval: which workspace's app-server asked, in which thread, with which request id, and
/// what kind of request it is (the answer's shape depends on it, and a wrong shape makes Codex
/// fail the item, so `approve` must know it without asking), in which turn, for which item.
///
/// The request id alone does not name a request for good: app-server numbers its requests from 0
/// again when it restarts (seen with codex-cli 0.163.0). A turn never outlives its app-server and
/// current Codex's turn ids are unique (UUIDv7), so the turn is part of the id whenever the
/// request names one, and `approve` checks it is still the thread's running turn. The item (the
/// model's call id) follows it: older Codex numbered turns per process, and the item still tells
/// two requests apart there. Shorter ids (`WORKSPACE~THREAD~REQUEST~KIND[~TURN]`, from older
/// Tether) still parse.
struct CodexMonitorApprovalID: Equatable, Sendable {
    enum Kind: String, Sendable, CaseIterable {
        case command = "cmd"
        case fileChange = "file"
        case permissions = "perm"
        case userInput = "input"

        /// The app-server request method → kind; nil for requests Tether does not surface.
        init?(method: String) {
            switch method {
            case "item/commandExecution/requestApproval": self = .command
            case "item/fileChange/requestApproval": self = .fileChange
            case "item/permissions/requestApproval": self = .permissions
            case "item/tool/requestUserInput": self = .userInput
            default: return nil
            }
        }

        var approvalKind: Approval.Kind {
            switch self {
            case .command: return .command
            case .fileChange: return .fileChange
            case .permissions: return .permission
            case .userInput: return .question
            }
        }
    }

    var workspace: String
    var thread: String
    /// The request's JSON-RPC id exactly as it arrived: the app-server ignores an answer whose id
    /// has another JSON type (the string "0" does not answer the number 0).
    var request: JSONValue
    var kind: Kind
    /// The request's `turnId`; nil when it named none (or the id came from an older Tether).
    var turn: String?
    /// The request's `itemId`; only kept with a turn (the id's parts are positional).
    var item: String?

    init(workspace: String, thread: String, request: JSONValue, kind: Kind, turn: String?, item: String?) {
        self.workspace = workspace
        self.thread = thread
        self.request = request
        self.kind = kind
        self.turn = turn.flatMap { $0.isEmpty ? nil : $0 }
        self.item = self.turn == nil ? nil : item.flatMap { $0.isEmpty ? nil : $0 }
    }

    init?(parsing id: String) {
        guard let parts = CompositeID.split(id, count: 6) ?? CompositeID.split(id, count: 5) ?? CompositeID.split(id, count: 4),
              let kind = Kind(rawValue: parts[3]) else { return nil }
        self.init(workspace: parts[0], thread: parts[1], request: Self.request(fromToken: parts[2]), kind: kind,
                  turn: parts.count > 4 ? parts[4] : nil, item: parts.count > 5 ? parts[5] : nil)
    }

    var string: String {
        CompositeID.join([workspace, thread, Self.token(for: request), kind.rawValue] + [turn, item].compactMap { $0 })
    }

    var session: String { CodexMonitorSessionID.make(workspace: workspace, thread: thread) }

    /// A request id as text: numbers as digits, strings behind `s:` (so "7" and 7 stay apart).
    static func token(for request: JSONValue) -> String {
        switch request {
        case .int(let value): return String(value)
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: return String(Int64(value))
        case .string(let value): return "s:" + value
        default: return "s:" + request.serialized
        }
    }

    static func request(fromToken token: String) -> JSONValue {
        if token.hasPrefix("s:") { return .string(String(token.dropFirst(2))) }
        if let number = Int64(token) { return .int(number) }
        return .string(token)
    }
}
