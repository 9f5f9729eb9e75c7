import TetherCore
import TetherStreaming

/// A session's id: the thread's, behind its scope when it has one. A CodexMonitor thread is only
/// reachable through its workspace (`WORKSPACE~THREAD`); an app-server spoken to directly names
/// its threads alone.
public enum CodexSessionID {
    public static func make(scope: String?, thread: String) -> String {
        scope.map { CompositeID.join([$0, thread]) } ?? thread
    }

    public static func parse(_ id: String, scoped: Bool) -> (scope: String?, thread: String)? {
        guard scoped else { return id.isEmpty ? nil : (nil, id) }
        guard let parts = CompositeID.split(id, count: 2) else { return nil }
        return (parts[0], parts[1])
    }
}

/// An approval: which app-server asked (the scope: CodexMonitor's workspace, or none), in which
/// thread, with which request id, and
/// what kind of request it is (the answer's shape depends on it, and a wrong shape makes Codex
/// fail the item, so `approve` must know it without asking), in which turn, for which item.
///
/// The request id alone does not name a request for good: app-server numbers its requests from 0
/// again when it restarts (seen with codex-cli 0.163.0). A turn never outlives its app-server and
/// current Codex's turn ids are unique (UUIDv7), so the turn is part of the id whenever the
/// request names one, and `approve` checks it is still the thread's running turn. The item (the
/// model's call id) follows it: older Codex numbered turns per process, and the item still tells
/// two requests apart there. As text: `[SCOPE~]THREAD~REQUEST~KIND[~TURN[~ITEM]]`; the shorter
/// forms (from older Tether) still parse.
public struct CodexApprovalID: Equatable, Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case command = "cmd"
        case fileChange = "file"
        case permissions = "perm"
        case userInput = "input"

        /// The app-server request method → kind; nil for requests Tether does not surface.
        public init?(method: String) {
            switch method {
            case "item/commandExecution/requestApproval": self = .command
            case "item/fileChange/requestApproval": self = .fileChange
            case "item/permissions/requestApproval": self = .permissions
            case "item/tool/requestUserInput": self = .userInput
            default: return nil
            }
        }

        public var approvalKind: Approval.Kind {
            switch self {
            case .command: return .command
            case .fileChange: return .fileChange
            case .permissions: return .permission
            case .userInput: return .question
            }
        }
    }

    /// CodexMonitor's workspace; nil for an app-server spoken to directly.
    public var scope: String?
    public var thread: String
    /// The request's JSON-RPC id exactly as it arrived: the app-server ignores an answer whose id
    /// has another JSON type (the string "0" does not answer the number 0).
    public var request: JSONValue
    public var kind: Kind
    /// The request's `turnId`; nil when it named none (or the id came from an older Tether).
    public var turn: String?
    /// The request's `itemId`; only kept with a turn (the id's parts are positional).
    public var item: String?

    public init(scope: String?, thread: String, request: JSONValue, kind: Kind, turn: String?, item: String?) {
        self.scope = scope
        self.thread = thread
        self.request = request
        self.kind = kind
        self.turn = turn.flatMap { $0.isEmpty ? nil : $0 }
        self.item = self.turn == nil ? nil : item.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `scoped`: whether the id starts with a scope (CodexMonitor's) or with the thread.
    public init?(parsing id: String, scoped: Bool) {
        let lead = scoped ? 1 : 0
        guard let parts = CompositeID.split(id, count: lead + 5) ?? CompositeID.split(id, count: lead + 4)
                ?? CompositeID.split(id, count: lead + 3),
              let kind = Kind(rawValue: parts[lead + 2]) else { return nil }
        self.init(scope: scoped ? parts[0] : nil, thread: parts[lead], request: Self.request(fromToken: parts[lead + 1]), kind: kind,
                  turn: parts.count > lead + 3 ? parts[lead + 3] : nil, item: parts.count > lead + 4 ? parts[lead + 4] : nil)
    }

    public var string: String {
        CompositeID.join([scope].compactMap { $0 } + [thread, Self.token(for: request), kind.rawValue] + [turn, item].compactMap { $0 })
    }

    public var session: String { CodexSessionID.make(scope: scope, thread: thread) }

    /// A request id as text: numbers as digits, strings behind `s:` (so "7" and 7 stay apart).
    public static func token(for request: JSONValue) -> String {
        switch request {
        case .int(let value): return String(value)
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: return String(Int64(value))
        case .string(let value): return "s:" + value
        default: return "s:" + request.serialized
        }
    }

    public static func request(fromToken token: String) -> JSONValue {
        if token.hasPrefix("s:") { return .string(String(token.dropFirst(2))) }
        if let number = Int64(token) { return .int(number) }
        return .string(token)
    }
}
